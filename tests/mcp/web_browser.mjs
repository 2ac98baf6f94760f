// The reviewer's page in headless Chromium (Debian's, driven by playwright-core)
// against a running assentd: reviewers log in with their tokens, requests made by the
// official MCP SDK client (stdio and HTTP) appear live, and every decision taken in
// the browser reaches the client; a quorum is completed by two people in two browsers.
// Prints TAP. Usage:
//   node web_browser.mjs STATE BUILD REVIEW_BASE MCP_URL AGENT_KEY ALICE_TOKEN BOB_TOKEN POLICY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";
import { must, tap } from "./tap.mjs";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { inflateSync } from "node:zlib";

const [state, build, base, mcpUrl, agentKey, aliceToken, bobToken, policyFile] = process.argv.slice(2);
const WAIT = 30000; // generous: a condition, never a duration, is what is checked
const T = tap(0), { ok, step } = T;
const sha256 = (b) => createHash("sha256").update(b).digest("hex");
const keyPub = () => `${state}/keys/${readdirSync(`${state}/keys`).find((f) => /^token-.*\.pub$/.test(f))}`;
function verify(token, aud, ...extra) {
  const r = spawnSync(`${build}/assent-verify`, ["token", "-", "--aud", aud, "--key", keyPub(), "--ledger", `${state}/ledger`, ...extra],
    { input: token, encoding: "utf8" });
  return { rc: r.status, err: (r.stderr || "").trim() };
}
const claims = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
// A screenshot's pixels (8-bit RGB or RGBA PNG, as Chromium writes them): {w, h, px(x, y) -> [r, g, b]}.
function png(buf) {
  must(buf.subarray(1, 4).toString() === "PNG", "not a PNG");
  let w = 0, h = 0, ch = 0;
  const idat = [];
  for (let o = 8; o < buf.length;) {
    const len = buf.readUInt32BE(o), type = buf.subarray(o + 4, o + 8).toString(), d = buf.subarray(o + 8, o + 8 + len);
    if (type === "IHDR") {
      w = d.readUInt32BE(0); h = d.readUInt32BE(4);
      must(d[8] === 8 && (d[9] === 2 || d[9] === 6) && d[12] === 0, `an unexpected PNG (depth ${d[8]}, colour ${d[9]}, interlace ${d[12]})`);
      ch = d[9] === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(d);
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat)), stride = w * ch, out = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) { // undo each row's filter (PNG spec, 9)
    const f = raw[y * (stride + 1)], row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= ch ? out[y * stride + i - ch] : 0, b = y ? out[(y - 1) * stride + i] : 0, c = y && i >= ch ? out[(y - 1) * stride + i - ch] : 0;
      const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const pred = f === 0 ? 0 : f === 1 ? a : f === 2 ? b : f === 3 ? (a + b) >> 1 : pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      out[y * stride + i] = (row[i] + pred) & 255;
    }
  }
  return { w, h, px: (x, y) => [out[y * stride + x * ch], out[y * stride + x * ch + 1], out[y * stride + x * ch + 2]] };
}
// How many pixels of img are within 40 (per channel) of the CSS colour "rgb(r, g, b)".
function pixelsOf(img, css) {
  const want = (css.match(/\d+/g) || []).slice(0, 3).map(Number);
  let k = 0;
  for (let y = 0; y < img.h; y++) for (let x = 0; x < img.w; x++) {
    const p = img.px(x, y);
    if (Math.abs(p[0] - want[0]) < 40 && Math.abs(p[1] - want[1]) < 40 && Math.abs(p[2] - want[2]) < 40) k++;
  }
  return k;
}

// ---- the agents: the SDK over stdio (a local agent) and over HTTP (a key) ----
const stdio = new Client({ name: "web-browser-test", version: "1.0.0" });
await stdio.connect(new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", state, "--policy", policyFile],
  env: { ...process.env }, stderr: "inherit" }));
const http = new Client({ name: "web-browser-http", version: "1.0.0" });
await http.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${agentKey}` } } }));
// ask(client, args): the call in flight; .settled says whether it has answered yet.
function ask(client, args) {
  const p = client.callTool({ name: "request_feedback", arguments: args }, undefined,
    { timeout: 600000, resetTimeoutOnProgress: true, onprogress: () => {} });
  const h = p.then((r) => r.structuredContent ?? r, (e) => ({ error: String(e) }));
  h.settled = false;
  h.then(() => { h.settled = true; });
  return h;
}
// The call's answer, or an error when none comes in a long while (the test then moves on).
const settle = (h) => Promise.race([h, new Promise((_, no) => setTimeout(() => no(new Error("the client's call never returned")), 4 * WAIT).unref())]);

// ---- the browsers ----
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
  args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
const violations = [], pageErrors = [];
async function newPage(name, opts = {}) {
  const ctx = await browser.newContext(opts);
  // Playwright's init scripts are not subject to the page's CSP: they only listen.
  await ctx.addInitScript(() => {
    window.__csp = [];
    window.__asked = 0; // how often the page asked for the notification permission
    if (window.Notification) {
      const ask = Notification.requestPermission.bind(Notification);
      Notification.requestPermission = (...a) => { window.__asked++; return ask(...a); };
    }
    document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const page = await ctx.newPage();
  page.on("console", (m) => { if (/Content Security Policy|Refused to (execute|apply|load|connect)/i.test(m.text())) violations.push(`${name}: ${m.text()}`); });
  page.on("pageerror", (e) => pageErrors.push(`${name}: ${e.message}`));
  return { ctx, page };
}
const card = (page, sid) => page.locator(`article.request[data-sid="${sid}"]`);
// The card of the request with this message, once it is on the page; its session id.
async function cardOf(page, message) {
  const c = page.locator("article.request", { has: page.locator("h3", { hasText: message }) });
  await c.first().waitFor({ timeout: WAIT });
  return { c: c.first(), sid: await c.first().getAttribute("data-sid") };
}
const gone = (page, sid) => card(page, sid).waitFor({ state: "detached", timeout: WAIT });
async function login(page, token) {
  await page.goto(`${base}/review`);
  await page.locator("#login").waitFor({ timeout: WAIT });
  await page.fill('#login input[name="token"]', token);
  await page.press('#login input[name="token"]', "Enter");
  await page.locator("#logout").waitFor({ timeout: WAIT });
}

// ---- the page and its headers ----
const A = await newPage("alice");
let resp;
await step("GET /review: the page, with the strict CSP, X-Frame-Options DENY, nosniff and no-referrer", async () => {
  resp = await A.page.goto(`${base}/review`);
  const h = resp.headers(), csp = h["content-security-policy"] ?? "";
  must(resp.status() === 200 && /text\/html/.test(h["content-type"] ?? ""), `status ${resp.status()} ${h["content-type"]}`);
  for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"])
    must(csp.includes(d), `the CSP lacks ${d}: "${csp}"`);
  must(/unsafe-inline|unsafe-eval|\*/.test(csp) === false, `the CSP allows too much: "${csp}"`);
  must(h["x-frame-options"] === "DENY" && h["x-content-type-options"] === "nosniff" && h["referrer-policy"] === "no-referrer",
    `headers: ${JSON.stringify([h["x-frame-options"], h["x-content-type-options"], h["referrer-policy"]])}`);
});
await step("/review/app.js and /review/app.css are served with their types and the CSP", async () => {
  for (const [p, type] of [["app.js", /javascript/], ["app.css", /text\/css/]]) {
    const r = await fetch(`${base}/review/${p}`);
    must(r.status === 200 && type.test(r.headers.get("content-type") ?? "") && /script-src 'self'/.test(r.headers.get("content-security-policy") ?? ""),
      `${p}: ${r.status} ${r.headers.get("content-type")}`);
  }
});
await step("without a session the page shows the login form and nothing of the queue", async () => {
  await A.page.locator("#login").waitFor({ timeout: WAIT });
  must(await A.page.locator("#app").isHidden() && await A.page.locator("#logout").isHidden(), "the queue or logout is visible");
});
await step("a wrong token is refused, with the server's error shown", async () => {
  await A.page.fill('#login input[name="token"]', "rt_not-a-real-token-0000000000000000000000");
  await A.page.click('#login button[type="submit"]');
  await A.page.locator("#status.error").waitFor({ timeout: WAIT });
  const t = await A.page.locator("#status").textContent();
  must(/refused: \S/.test(t) && !/HTTP 401$/.test(t) && await A.page.locator("#login").isVisible(), `status: "${t}"`);
  return t;
});
await step("the login form works with the keyboard alone: Tab to the token field, type, Enter", async () => {
  await A.page.goto(`${base}/review`);
  await A.page.locator("#login").waitFor({ timeout: WAIT });
  await A.page.keyboard.press("Tab");
  must(await A.page.evaluate(() => document.activeElement?.name) === "token", "Tab did not reach the token field first");
  await A.page.keyboard.type(aliceToken);
  await A.page.keyboard.press("Enter");
  await A.page.locator("#who", { hasText: "alice" }).waitFor({ timeout: WAIT });
  must(await A.page.locator("#login").isHidden(), "the login form is still shown");
});
await step("no session cookie: the session lives in this tab's sessionStorage, not in any other tab", async () => {
  must(!(await A.ctx.cookies()).some((x) => x.name === "assent_session"), "a session cookie was set");
  const v = await A.page.evaluate(() => sessionStorage.getItem("assent_session"));
  must(/^ws_[A-Za-z0-9_-]{43}$/.test(v ?? ""), `sessionStorage holds ${String(v).slice(0, 8)}`);
  const other = await A.ctx.newPage();
  await other.goto(`${base}/review`);
  await other.locator("#login").waitFor({ timeout: WAIT });
  must(await other.evaluate(() => sessionStorage.getItem("assent_session")) === null, "another tab has it");
  await other.close();
});

// ---- approve: a stdio agent's request with a diff and a subject's bytes ----
const DIFF = "--- a/main.tf\n+++ b/main.tf\n@@ -1,3 +1,3 @@\n resource \"x\" {\n-  size = 1\n+  size = 2\n }\n";
const PLAN = "terraform plan bytes\n";
writeFileSync(`${state}/web-plan.tfplan`, PLAN);
await A.page.evaluate(() => { window.__sameDocument = true; });
let call = ask(stdio, { type: "approval", message: "web: apply the plan to prod?", audience: "tf-prod",
  context: { workspace: "prod", risk: "high", diff: DIFF, note: "<img src=x onerror=alert(1)>" },
  subject: { name: "plan.tfplan", content: Buffer.from(PLAN).toString("base64") } });
let c, sid;
await step("a request from the SDK client (stdio) appears on the page without a reload", async () => {
  ({ c, sid } = await cardOf(A.page, "web: apply the plan to prod?"));
  must(await A.page.evaluate(() => window.__sameDocument) === true, "the page was reloaded");
  return sid;
});
await step("its context is pretty JSON, the agent's markup shown as text, the diff with added and deleted lines coloured", async () => {
  const pre = c.locator("pre.context");
  const t = await pre.textContent();
  must(t.includes('"workspace": "prod"') && t.includes("<img src=x onerror=alert(1)>"), `context text: ${t.slice(0, 200)}`);
  must(await c.locator("img").count() === 0, "the agent's markup became an element");
  const add = c.locator(".diff .add", { hasText: "+  size = 2" }), del = c.locator(".diff .del", { hasText: "-  size = 1" });
  must(await add.count() === 1 && await del.count() === 1, "no added or deleted line");
  const colour = (l) => l.evaluate((e) => getComputedStyle(e).color + getComputedStyle(e).backgroundColor);
  const ctxLine = c.locator(".diff .ctx").first();
  const [ca, cd, cc] = [await colour(add), await colour(del), await colour(ctxLine)];
  must(ca !== cd && ca !== cc && cd !== cc, `colours: add ${ca}, del ${cd}, context ${cc}`);
});
await step("the subject: name, the gateway's sha256, computed by the gateway, and its bytes as text", async () => {
  const s = c.locator(".subjects li").first(), t = await s.textContent();
  must(t.includes("plan.tfplan") && t.includes(sha256(PLAN)) && t.includes("computed by the gateway"), `subject: ${t.slice(0, 200)}`);
  await s.locator("summary").click();
  must((await s.locator("pre.bytes").textContent()) === PLAN, "the bytes are not shown as the text they are");
});
await step("the request shows its audience, the requesting agent, the policy rule, its risk, quorum and the time left", async () => {
  const t = await c.locator("dl.facts").textContent();
  must(t.includes("tf-prod") && /local uid \d+, client web-browser-test\/1\.0\.0 \(declared\)/.test(t) && /rule|default rule/.test(t) && /0 of 1/.test(t), `facts: ${t}`);
  must((await c.locator(".risk").textContent()) === "risk high", "no risk shown");
  const left = c.locator(".left"), first = await left.textContent();
  must(/^\d+:\d\d left$/.test(first), `time left: "${first}"`);
  await A.page.waitForFunction(([s, was]) => document.querySelector(`article[data-sid="${s}"] .left`)?.textContent !== was,
    [sid, first], { timeout: WAIT });
  return `${first}, then ${await left.textContent()}`;
});
let seq;
await step("approve in the browser: the SDK client's call returns approved, with an approval token", async () => {
  await c.locator('textarea[name="comment"]').fill("looks right");
  await c.locator('button[data-action="approve"]').click();
  const sc = await settle(call);
  must(sc?.approved === true && sc.status === "approved" && sc.session_id === sid && typeof sc.approval_token === "string",
    `the client got ${JSON.stringify(sc).slice(0, 300)}`);
  call.token = sc.approval_token;
});
await step("the token verifies (assent-verify), bound to the plan's bytes and the ledger", async () => {
  const v = verify(call.token ?? "", "tf-prod", "--subject", `${state}/web-plan.tfplan`);
  must(v.rc === 0, `exit ${v.rc}: ${v.err}`);
  seq = claims(call.token).ledger?.seq;
  return `ledger seq ${seq}`;
});
await step("the request leaves the queue, and Recent decisions lists it with its ledger seq number", async () => {
  await gone(A.page, sid);
  const li = A.page.locator(`#recent li[data-sid="${sid}"]`);
  await li.waitFor({ timeout: WAIT });
  const t = await li.textContent();
  must(new RegExp(`seq ${seq}\\b`).test(t) && /approved/.test(t) && /alice/.test(t), `recent: "${t}" (the token says seq ${seq})`);
  must(new RegExp(`seq ${seq}\\b`).test(await A.page.locator("#status").textContent()), "the status does not give the seq");
});

// ---- reject: an HTTP agent's request with an asserted subject ----
const HEX = sha256("an image the agent only names");
call = ask(http, { type: "approval", message: "web: push the image?", subject: { name: "image.tar", digest: { sha256: HEX } } });
await step("a request from the SDK client over HTTP appears, naming its agent and its subject as asserted", async () => {
  ({ c, sid } = await cardOf(A.page, "web: push the image?"));
  const t = await c.textContent();
  must(t.includes("agent web-agent") && t.includes(HEX) && t.includes("asserted by the agent"), `card: ${t.slice(0, 300)}`);
});
await step("reject without a reason is not sent: the page asks for one and the request stays", async () => {
  await c.locator('button[data-action="reject"]').click();
  await A.page.locator("#status.error", { hasText: "reason" }).waitFor({ timeout: WAIT });
  must(await A.page.evaluate(() => document.activeElement?.name) === "comment", "the reason field is not focused");
  must(!call.settled && await c.isVisible(), "the request was decided");
});
await step("reject with a reason: the client's call returns rejected with it, and no token", async () => {
  await c.locator('textarea[name="comment"]').fill("not this image");
  await c.locator('button[data-action="reject"]').click();
  const sc = await settle(call);
  must(sc?.approved === false && sc.status === "rejected" && sc.response === "not this image" && !sc.approval_token,
    JSON.stringify(sc).slice(0, 300));
  await gone(A.page, sid);
});

// ---- issue 17: the title counts, the risk badge reads risk_level, SQL is a block, deep link, compact ----
const SQL = "BEGIN;\nALTER TABLE users DROP COLUMN email;\nCOMMIT;";
const callA = ask(http, { type: "approval", message: "web: migrate users?", context: { risk_level: "HIGH", sql: SQL } });
const callB = ask(http, { type: "approval", message: "web: restart the worker?" });
let cA, cB;
await step("the tab's title counts what waits: (2) with two requests pending", async () => {
  cA = await cardOf(A.page, "web: migrate users?");
  cB = await cardOf(A.page, "web: restart the worker?");
  await A.page.waitForFunction(() => document.title === "(2) assent: review", null, { timeout: WAIT });
  return await A.page.title();
});
await step("risk_level \"HIGH\" is the high risk badge, coloured as high", async () => {
  const b = cA.c.locator(".risk");
  must((await b.textContent()) === "risk HIGH" && /\brisk-high\b/.test(await b.getAttribute("class")), `badge: ${await b.textContent()} ${await b.getAttribute("class")}`);
  const [hi, plain] = [await b.evaluate((e) => getComputedStyle(e).color), await cA.c.locator(".type").evaluate((e) => getComputedStyle(e).color)];
  must(hi !== plain, `the badge is not coloured: ${hi}`);
});
await step("a multi-line string (SQL) is a block of its lines, not an escaped one-liner", async () => {
  const t = await cA.c.locator("pre.context .text-block").textContent();
  must(t === SQL, `block: ${JSON.stringify(t)}`);
  must(!(await cA.c.locator("pre.context").textContent()).includes("\\n"), "an escaped \\n is shown");
});
await step("the notification button asks for permission only when clicked, never on load", async () => {
  const b = A.page.locator("#notify");
  must(await b.isVisible() && (await b.textContent()) === "Notify me", `button: ${await b.textContent()}`);
  must(await A.page.evaluate(() => window.__asked) === 0, "the page asked on load");
  await b.click();
  await A.page.waitForFunction(() => window.__asked === 1, null, { timeout: WAIT });
  return `then the button says "${await b.textContent()}"`;
});
await step("a deep link /review#ID opens the page at that request, marked and focused", async () => {
  await A.page.goto("about:blank");
  await A.page.goto(`${base}/review#${cB.sid}`);
  await A.page.locator(`article.request.linked[data-sid="${cB.sid}"]`).waitFor({ timeout: WAIT });
  must(await A.page.evaluate(() => document.activeElement?.closest("article")?.dataset.sid) === cB.sid, "focus is elsewhere");
  must(await A.page.locator("article.request.linked").count() === 1, "more than one is marked");
  cA.c = card(A.page, cA.sid); cB.c = card(A.page, cB.sid);
});
await step("the compact list: one line a request, a click on its title opens it, the toggle gives the cards back", async () => {
  await A.page.evaluate(() => { location.hash = ""; });
  await A.page.locator("#compact").click();
  const facts = cA.c.locator("dl.facts");
  must(await A.page.locator("#requests.compact").count() === 1 && await facts.isHidden() && await cA.c.locator("h3").isVisible() && await cA.c.locator(".risk").isVisible(),
    "the compact list still shows the cards' details");
  const hc = await cA.c.evaluate((e) => e.getBoundingClientRect().height);
  await cA.c.locator("h3").click();
  must(await facts.isVisible(), "a click on the title does not open the request");
  await A.page.locator("#compact").click();
  must(await A.page.locator("#requests.compact").count() === 0 && await cB.c.locator("dl.facts").isVisible(), "the cards did not come back");
  return `a compact line is ${Math.round(hc)} px high`;
});
await step("both are decided from the page, and the title drops its count", async () => {
  for (const x of [cA, cB]) await x.c.locator('button[data-action="approve"]').click();
  const [a, b] = [await settle(callA), await settle(callB)];
  must(a?.status === "approved" && b?.status === "approved", `${JSON.stringify(a).slice(0, 120)} ${JSON.stringify(b).slice(0, 120)}`);
  await A.page.waitForFunction(() => document.title === "assent: review", null, { timeout: WAIT });
});

// ---- input: the default prefilled; a binary subject as a hex dump ----
const BIN = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
call = ask(stdio, { type: "input", message: "web: which branch?", default: "main",
  subject: { name: "blob.bin", content: BIN.toString("base64") } });
await step("input: the answer field is prefilled with the default", async () => {
  ({ c, sid } = await cardOf(A.page, "web: which branch?"));
  must(await c.locator('input[name="answer"]').inputValue() === "main", "not prefilled");
});
await step("a binary subject's bytes are a hex dump of the first 256 bytes, collapsed", async () => {
  const d = c.locator("details.bytes");
  must(await d.evaluate((e) => !e.open), "not collapsed");
  const sum = await d.locator("summary").textContent();
  await d.locator("summary").click();
  const lines = (await d.locator("pre").textContent()).split("\n");
  must(/512 bytes, binary/.test(sum) && lines.length === 16 && lines[0].startsWith("00000000  00 01 02 03") &&
    lines[15].startsWith("000000f0  f0 f1"), `${sum}: ${lines[0]} ... ${lines.length} lines`);
});
await step("input: the answer typed in the browser comes back to the client", async () => {
  await c.locator('input[name="answer"]').fill("release-2");
  await c.locator('input[name="answer"]').press("Enter"); // Enter in the field answers
  const sc = await settle(call);
  must(sc?.status === "answered" && sc.response === "release-2" && sc.session_id === sid, JSON.stringify(sc).slice(0, 300));
  await gone(A.page, sid);
});

// ---- selection, with the keyboard alone ----
call = ask(http, { type: "selection", message: "web: pick a size", options: ["small", "medium", "large"] });
await step("selection: one radio per option, counted from 1", async () => {
  ({ c, sid } = await cardOf(A.page, "web: pick a size"));
  const v = await c.locator('input[type="radio"][name="option"]').evaluateAll((r) => r.map((x) => x.value).join(","));
  must(v === "1,2,3", `options ${v}`);
});
await step("selection with the keyboard alone (Tab to the options, arrow, Tab to Select, Enter): the client gets the option", async () => {
  await A.page.locator("#pending-h").focus();
  for (let i = 0; i < 100; i++) {
    await A.page.keyboard.press("Tab");
    if (await A.page.evaluate((s) => document.activeElement?.name === "option" &&
      document.activeElement.closest("article")?.dataset.sid === s, sid)) break;
  }
  must(await A.page.evaluate(() => document.activeElement?.name) === "option", "Tab never reached the options");
  await A.page.keyboard.press("ArrowDown");
  for (let i = 0; i < 5 && await A.page.evaluate(() => document.activeElement?.dataset?.action !== "select"); i++)
    await A.page.keyboard.press("Tab");
  must(await A.page.evaluate(() => document.activeElement?.dataset?.action) === "select", "Tab never reached Select");
  const ring = await A.page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  must(ring !== "none", "the focused button has no visible focus ring");
  await A.page.keyboard.press("Enter");
  const sc = await settle(call);
  must(sc?.status === "selected" && sc.response === "medium" && sc.selection === 2, JSON.stringify(sc).slice(0, 300));
  await gone(A.page, sid);
});

// ---- a long context, cut by the gateway: collapsed, the marker in view ----
call = ask(stdio, { type: "confirmation", message: "web: a long log", context: { log: "x".repeat(300000) } });
await step("a context the gateway cut shows its truncation marker, the payload collapsed", async () => {
  ({ c, sid } = await cardOf(A.page, "web: a long log"));
  const mark = c.locator("p.trunc");
  must(await mark.isVisible() && /…\[truncated \d+ bytes\]/.test(await mark.textContent()), "no visible marker");
  must(await c.locator("details pre.context").count() === 1 && await c.locator("details").first().evaluate((e) => !e.open), "not collapsed");
  return await mark.textContent();
});
await step("confirmation: Approve returns approved", async () => {
  await c.locator('button[data-action="approve"]').click();
  const sc = await settle(call);
  must(sc?.approved === true && sc.session_id === sid, JSON.stringify(sc).slice(0, 300));
  await gone(A.page, sid);
});

// ---- a quorum of two, completed by two people in two browsers ----
const B = await newPage("bob");
await step("a second reviewer (bob, re-issued token) logs in in a second browser", async () => {
  await login(B.page, bobToken);
  must(/bob/.test(await B.page.locator("#who").textContent()), "not bob");
});
call = ask(stdio, { type: "approval", message: "web: quorum deploy?" });
let cb;
await step("a quorum-2 request shows 0 of 2 approvals to both", async () => {
  ({ c, sid } = await cardOf(A.page, "web: quorum deploy?"));
  ({ c: cb } = await cardOf(B.page, "web: quorum deploy?"));
  for (const x of [c, cb]) await x.locator("dd", { hasText: "0 of 2" }).waitFor({ timeout: WAIT });
});
await step("alice approves: the page says 'approved by alice, 1 of 2', bob sees her approval live, the agent still waits", async () => {
  await c.locator('button[data-action="approve"]').click();
  await A.page.locator("#status", { hasText: "approved by alice, 1 of 2" }).waitFor({ timeout: WAIT });
  await cb.locator("dd", { hasText: "1 of 2: alice" }).waitFor({ timeout: WAIT });
  must(!call.settled, "the call returned after one approval");
});
await step("bob approves: the call returns approved, with a token that verifies", async () => {
  await cb.locator('button[data-action="approve"]').click();
  const sc = await settle(call);
  must(sc?.approved === true && sc.session_id === sid && sc.approval_token, JSON.stringify(sc).slice(0, 300));
  const v = verify(sc.approval_token, "assent");
  must(v.rc === 0, `verify exit ${v.rc}: ${v.err}`);
  await gone(A.page, sid);
  await gone(B.page, sid);
  const t = await B.page.locator(`#recent li[data-sid="${sid}"]`).textContent({ timeout: WAIT });
  must(/seq \d+/.test(t), `recent: ${t}`);
});

// ---- a phone ----
const P = await newPage("phone", { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
call = ask(http, { type: "approval", message: "web: from the phone?",
  context: { diff: DIFF, path: "/a/very/long/path/" + "segment/".repeat(40) } });
await step("on a phone (375 px): one column, nothing wider than the screen, and a decision works", async () => {
  await login(P.page, bobToken);
  ({ c, sid } = await cardOf(P.page, "web: from the phone?"));
  const [sw, w] = await P.page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  must(sw <= w, `the page is ${sw} px wide on a ${w} px screen`);
  const box = await c.boundingBox();
  must(box && box.x >= 0 && box.x + box.width <= w, `the card spans ${JSON.stringify(box)}`);
  await c.locator('textarea[name="comment"]').fill("not from a phone");
  await c.locator('button[data-action="reject"]').tap();
  const sc = await settle(call);
  must(sc?.status === "rejected" && sc.response === "not from a phone", JSON.stringify(sc).slice(0, 300));
});

// ---- what an agent wrote is shown, never obeyed: hidden characters are marked ----
call = ask(stdio, { type: "selection", message: "web: hidden\u200e chars\u200b here", options: ["keep\ufeff", "drop"],
  context: { cmd: "echo \u001b[8m; rm -rf \u202e/tsil", note: "x\u2066y" },
  subject: [{ name: "plan\u2060.tf", digest: { sha256: "a".repeat(64) } }] });
await step("control, bidirectional and invisible characters in message, context, options and subject names are shown as marked \\uXXXX", async () => {
  ({ c, sid } = await cardOf(A.page, "web: hidden"));
  const marks = await c.locator("span.hidden-char").allTextContents();
  for (const want of ["\\u200e", "\\u200b", "\\u202e", "\\u2066", "\\ufeff", "\\u2060"])
    must(marks.includes(want), `no marked ${want} among ${JSON.stringify(marks)}`);
  const text = await c.evaluate((e) => e.textContent);
  must(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/.test(text), "a hidden character is on the page as it is");
  const bg = await c.locator("span.hidden-char").first().evaluate((e) => getComputedStyle(e).backgroundColor);
  must(bg && bg !== "rgba(0, 0, 0, 0)", `the mark is not highlighted (background ${bg})`);
  await c.locator('textarea[name="comment"]').fill("hidden text");
  await c.locator('button[data-action="reject"]').click();
  const sc = await settle(call);
  must(sc?.status === "rejected", JSON.stringify(sc).slice(0, 300));
  return `${marks.length} marks`;
});

call = ask(stdio, { type: "input", message: "web: hidden default", default: "yes\u200b" });
await step("an input's default with an invisible character is shown marked beside the input box", async () => {
  ({ c, sid } = await cardOf(A.page, "web: hidden default"));
  const marks = await c.locator("p.trunc span.hidden-char").allTextContents();
  must(marks.includes("\\u200b"), `marks: ${JSON.stringify(marks)}`);
  await c.locator('input[name="answer"]').fill("no");
  await c.locator('button[data-action="answer"]').click();
  const sc = await settle(call);
  must(sc?.status === "answered" || sc?.response === "no", JSON.stringify(sc).slice(0, 300));
});

// ---- the call records on the page: a request's events, a QA report with the calls behind it ----
await step("a pending request's Events list its approval.requested (loaded when opened)", async () => {
  call = ask(stdio, { type: "approval", message: "web: what happened so far?" });
  ({ c, sid } = await cardOf(A.page, "web: what happened so far?"));
  await c.locator("details.events summary").click();
  await c.locator("details.events li", { hasText: "approval.requested" }).first().waitFor({ timeout: WAIT });
  await c.locator('button[data-action="approve"]').click();
  const sc = await settle(call);
  must(sc?.approved === true, JSON.stringify(sc).slice(0, 200));
  await gone(A.page, sid);
});
await step("QA reports: an agent's report, opened, lists the calls before it in order with their outcomes", async () => {
  await stdio.callTool({ name: "list_pending_feedback", arguments: {} });
  const r = await stdio.callTool({ name: "qa_submit_feedback",
    arguments: { type: "bug", title: "web: the list came back empty", description: "seen <b>twice</b>" } });
  must(r.structuredContent?.linked_calls >= 1, JSON.stringify(r.structuredContent));
  await A.page.click("#load-reports");
  const rep = A.page.locator("details.report", { hasText: "web: the list came back empty" }).first();
  await rep.waitFor({ timeout: WAIT });
  await rep.locator("summary").click();
  const li = rep.locator("ol.calls li", { hasText: "list_pending_feedback" }).last();
  await li.waitFor({ timeout: WAIT });
  const t = await li.textContent();
  must(/\bok\b/.test(t) && /linked by session/.test(t), `call line: ${t}`);
  must(await rep.locator("b").count() === 0, "the report's markup became an element");
  return `${await rep.locator("ol.calls li").count()} calls`;
});

// ---- issue 17: the history (filters, seq and proof per decision) and its chart ----
const rows = (page) => page.locator("#history tbody tr");
async function historyOutcomes(page) {
  return page.locator("#history tbody tr td:nth-child(3)").allTextContents();
}
await step("the history lists this page's decisions newest first, each with its ledger seq and a proof link", async () => {
  await A.page.locator("#history-h").scrollIntoViewIfNeeded();
  await A.page.waitForFunction(() => document.querySelectorAll("#history tbody tr").length >= 10, null, { timeout: WAIT });
  const seqs = (await A.page.locator("#history tbody tr td.seq").allTextContents()).map(Number);
  must(seqs.every((x) => x > 0) && seqs.every((x, i) => !i || x < seqs[i - 1]), `seqs: ${seqs.join(",")}`);
  must(await A.page.locator("#history tbody tr a.proof").count() === seqs.length, "a row without its proof link");
  const outs = new Set(await historyOutcomes(A.page));
  for (const o of ["approved", "rejected", "answered", "selected"]) must(outs.has(o), `no ${o} decision in ${[...outs]}`);
  return `${seqs.length} decisions, seq ${seqs.at(-1)} to ${seqs[0]}`;
});
await step("the filters change the table: outcome, who, rule, a time range, and Clear gives it back", async () => {
  const all = await rows(A.page).count(), f = "#history-filters";
  await A.page.selectOption(`${f} select[name="outcome"]`, "rejected");
  await A.page.waitForFunction(() => [...document.querySelectorAll("#history tbody tr td:nth-child(3)")].every((t) => t.textContent === "rejected"), null, { timeout: WAIT });
  const rej = await rows(A.page).count();
  must(rej >= 2 && rej < all, `${rej} rejected of ${all}`);
  await A.page.selectOption(`${f} select[name="outcome"]`, "");
  await A.page.fill(`${f} input[name="who"]`, "bob");
  await A.page.press(`${f} input[name="who"]`, "Enter");
  await A.page.waitForFunction(() => { const b = [...document.querySelectorAll("#history tbody tr td.by")]; return b.length && b.every((t) => t.textContent === "bob"); }, null, { timeout: WAIT });
  const bobs = await rows(A.page).count();
  await A.page.fill(`${f} input[name="who"]`, "nobody-at-all");
  await A.page.press(`${f} input[name="who"]`, "Enter");
  await A.page.waitForFunction(() => document.querySelectorAll("#history tbody tr").length === 0 && /No decision matches/.test(document.querySelector("#history-note").textContent), null, { timeout: WAIT });
  await A.page.fill(`${f} input[name="who"]`, "");
  await A.page.fill(`${f} input[name="rule"]`, "2");
  await A.page.press(`${f} input[name="rule"]`, "Enter");
  await A.page.waitForFunction(() => document.querySelectorAll("#history tbody tr").length > 0 && [...document.querySelectorAll("#history tbody tr td:nth-child(7)")].every((t) => t.textContent === "2"), null, { timeout: WAIT });
  const rule2 = await rows(A.page).count();
  await A.page.fill(`${f} input[name="rule"]`, "x");
  await A.page.press(`${f} input[name="rule"]`, "Enter");
  await A.page.locator("#history-note.error", { hasText: "rule must be a whole number" }).waitFor({ timeout: WAIT });
  await A.page.click(`${f} button[type="reset"]`);
  // At least all: a request of an earlier step may time out meanwhile and join the history.
  await A.page.selectOption(`${f} select[name="range"]`, "3600");
  await A.page.waitForFunction((n) => document.querySelectorAll("#history tbody tr").length >= n && !document.querySelector("#history-note.error"), all, { timeout: WAIT });
  await A.page.click(`${f} button[type="reset"]`);
  await A.page.waitForFunction((n) => document.querySelectorAll("#history tbody tr").length >= n, all, { timeout: WAIT });
  return `all ${all}, rejected ${rej}, bob ${bobs}, rule 2 ${rule2}, the last hour ${all}; a bad rule names it`;
});
await step("a decision's proof downloads, and assent-verify proof --check holds for it", async () => {
  const row = rows(A.page).first(), seq = Number(await row.getAttribute("data-seq"));
  const [dl] = await Promise.all([A.page.waitForEvent("download", { timeout: WAIT }), row.locator("a.proof").click()]);
  must(dl.suggestedFilename() === `assent-entry-${seq}.proof`, `saved as ${dl.suggestedFilename()}`);
  const file = `${state}/../entry-${seq}.proof`;
  await dl.saveAs(file);
  const r = spawnSync(`${build}/assent-verify`, ["proof", "--check", file, "--key", `${state}/keys/checkpoint.pub`], { encoding: "utf8" });
  must(r.status === 0, `assent-verify proof --check: exit ${r.status}: ${r.stderr}`);
  must(JSON.parse(readFileSync(file, "utf8")).index === seq, "the proof is of another entry");
  return `entry ${seq}`;
});
let chartShot;
await step("the chart is drawn: SVG bars of non-zero height, a time-to-decision dot, and a screenshot that is not blank", async () => {
  const box = A.page.locator("#chart-box");
  await box.scrollIntoViewIfNeeded();
  const bars = await A.page.$$eval("#chart svg rect.bar-req, #chart svg rect.bar-dec", (rs) => rs.map((r) => Number(r.getAttribute("height"))));
  must(bars.length >= 2 && bars.every((hh) => hh > 0), `bar heights ${bars.join(",")}`);
  must(await A.page.locator("#chart svg circle.ttd-dot").count() >= 1, "no time-to-decision dot");
  const label = await A.page.locator("#chart svg").getAttribute("aria-label");
  must(/\d+ requests asked, \d+ decided/.test(label ?? ""), `aria-label: ${label}`);
  chartShot = await box.screenshot();
  const img = png(chartShot);
  const req = await A.page.$eval("#chart rect.bar-req", (r) => getComputedStyle(r).fill);
  const dec = await A.page.$eval("#chart rect.bar-dec", (r) => getComputedStyle(r).fill);
  const nreq = pixelsOf(img, req), ndec = pixelsOf(img, dec);
  must(nreq > 50 && ndec > 50, `pixels of the bars' colours: ${nreq} (${req}), ${ndec} (${dec})`);
  // the same box with its chart taken out: the pixels must differ
  await A.page.evaluate(() => { window.__chart = document.querySelector("#chart svg"); window.__chart.remove(); });
  const empty = png(await box.screenshot());
  await A.page.evaluate(() => document.querySelector("#chart").append(window.__chart));
  must(pixelsOf(empty, req) < nreq / 10, "the bars' colour is there without the chart");
  return `${img.w}x${img.h} px, ${nreq} px of request bars, ${ndec} px of decision bars, ${bars.length} bars`;
});

// ---- the page with 1 and with 200 pending requests (screenshots kept in SHOTS, described in the closing note) ----
const SHOTS = process.env.SHOTS || `${state}/../shots`;
mkdirSync(SHOTS, { recursive: true });
const later = async (i) => (await http.callTool({ name: "request_feedback", arguments: { type: "approval", wait: false,
  message: `web: batch request ${String(i).padStart(3, "0")} of 200`,
  context: { step: i, risk: i % 7 === 0 ? "high" : "low" } } })).structuredContent?.session_id;
await step("with 1 pending request: the page, the history and the chart in one screenshot", async () => {
  must(await later(1), "the request was not queued");
  await A.page.waitForFunction(() => document.title === "(1) assent: review", null, { timeout: WAIT });
  await A.page.screenshot({ path: `${SHOTS}/pending-1.png`, fullPage: true });
  await A.page.setViewportSize({ width: 1280, height: 900 });
  await A.page.evaluate(() => scrollTo(0, 0));
  await A.page.screenshot({ path: `${SHOTS}/pending-1-viewport.png` });
  return `${SHOTS}/pending-1.png`;
});
await step("with 200 pending: the first 100 shown, the rest counted, the compact list one line each, the history still reachable", async () => {
  for (let i = 2; i <= 200; i++) must(await later(i), `request ${i} was not queued`); // one at a time: one connection
  await A.page.waitForFunction(() => document.title === "(200) assent: review", null, { timeout: 4 * WAIT });
  await A.page.waitForFunction(() => document.querySelectorAll("article.request").length === 100, null, { timeout: WAIT });
  // the chart counts what waits as asked: 200 more this hour than it has decided
  await A.page.waitForFunction(() => { const m = /(\d+) requests asked, (\d+) decided/.exec(document.querySelector("#chart svg")?.getAttribute("aria-label") ?? "");
    return m && Number(m[1]) >= Number(m[2]) + 200; }, null, { timeout: WAIT });
  const more = await A.page.locator("#more").textContent();
  must(/100 more wait/.test(more), `#more: ${more}`);
  await A.page.evaluate(() => scrollTo(0, 0));
  await A.page.screenshot({ path: `${SHOTS}/pending-200-viewport.png` });
  const full = await A.page.evaluate(() => document.documentElement.scrollHeight);
  if ((await A.page.locator("#requests.compact").count()) === 0) await A.page.click("#compact");
  await A.page.waitForFunction(() => document.querySelector("#requests.compact"), null, { timeout: WAIT });
  const compact = await A.page.evaluate(() => document.documentElement.scrollHeight);
  await A.page.screenshot({ path: `${SHOTS}/pending-200-compact.png`, fullPage: true });
  await A.page.evaluate(() => scrollTo(0, 0));
  await A.page.screenshot({ path: `${SHOTS}/pending-200-compact-viewport.png` });
  await A.page.click("#to-history"); // one click from the top of a long queue to the history
  await A.page.waitForFunction(() => document.activeElement?.id === "history-h" && document.querySelector("#history-h").getBoundingClientRect().top < innerHeight, null, { timeout: WAIT });
  const hist = await A.page.evaluate(() => document.querySelector("#history-h").getBoundingClientRect().top + scrollY);
  await A.page.screenshot({ path: `${SHOTS}/pending-200-history.png` });
  const chart = await A.page.$$eval("#chart svg rect.bar-req", (rs) => rs.map((r) => Number(r.getAttribute("height"))));
  must(compact < full / 3, `the compact page is ${compact} px high, the cards' ${full} px`);
  must(chart.some((hh) => hh > 0), "the chart lost its bars");
  await A.page.click("#compact"); // the cards back, for what follows
  return `full cards ${full} px high, compact ${compact} px, the history at y=${Math.round(hist)} px, one click away; shots in ${SHOTS}`;
});

// ---- logout ----
await step("logout: the login form comes back, the tab forgets the session, and the old one is refused (401)", async () => {
  const old = await A.page.evaluate(() => sessionStorage.getItem("assent_session"));
  await A.page.click("#logout");
  await A.page.locator("#login").waitFor({ timeout: WAIT });
  must(await A.page.locator("#app").isHidden(), "the queue is still shown");
  must(await A.page.evaluate(() => sessionStorage.getItem("assent_session")) === null, "the tab still holds it");
  const r = await fetch(`${base}/review/api/me`, { headers: { Authorization: `Bearer ${old}` } });
  must(old && r.status === 401, `GET /review/api/me with the old session: ${r.status}`);
});

// ---- what the browser saw throughout ----
await step("no Content-Security-Policy violation and no script error on any page", async () => {
  for (const x of [A, B, P]) violations.push(...(await x.page.evaluate(() => window.__csp ?? [])));
  must(!violations.length && !pageErrors.length, [...violations, ...pageErrors].join("; ").slice(0, 400));
});

await browser.close();
await stdio.close();
await http.close();
T.end();
