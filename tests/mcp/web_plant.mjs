// A hostile page on another port of the same host, in headless Chromium (Debian's,
// driven by playwright-core), against a running assentd: cookies are not isolated by
// port, so such a page can set an assent_session cookie for 127.0.0.1 with a longer
// Path, which the browser sends before the real one. It must neither switch a
// reviewer's page into another reviewer's session (decisions recorded as theirs) nor
// lock the reviewer out of the page. The daemon runs with short event streams, which
// the page must reopen by itself, and two streams per reviewer, past which the page
// waits and tries again. Prints TAP. Usage:
//   node web_plant.mjs STATE BUILD REVIEW_BASE ALICE_TOKEN BOB_TOKEN plant|streams
// plant: against a daemon with ASSENT_REVIEW_STREAM_SECONDS=2; streams: with
// ASSENT_REVIEW_STREAMS_PER_REVIEWER=2 (and long streams).
import { chromium } from "playwright-core";
import { must, tap } from "./tap.mjs";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { createInterface } from "node:readline";

const [state, build, base, aliceToken, bobToken, part] = process.argv.slice(2);
const WAIT = 30000; // generous: a condition, never a duration, is what is checked
const T = tap(0), { ok, step } = T;

// ---- an agent over the stdio bridge: raw JSON-RPC lines ----
const agent = spawn(`${build}/assentd`, ["--stdio", "--state", state], { stdio: ["pipe", "pipe", "inherit"] });
const answers = new Map();
createInterface({ input: agent.stdout }).on("line", (l) => {
  const m = JSON.parse(l);
  if (m.id !== undefined) { answers.get(m.id)?.(m); answers.delete(m.id); }
});
let nextId = 1;
const rpc = (method, params) => new Promise((resolve) => {
  const id = nextId++;
  answers.set(id, resolve);
  agent.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
});
await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "web-plant-test", version: "1" } });
agent.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
const ask = (message) => rpc("tools/call", { name: "request_feedback", arguments: { type: "approval", message } })
  .then((m) => m.result?.structuredContent ?? m);
const settle = (p) => Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error("the agent's call never returned")), 4 * WAIT).unref())]);

// ---- the hostile page: another port of 127.0.0.1, cookies for the reviewer's paths ----
let plant = "";
const hostile = createServer((req, res) => {
  res.writeHead(200, { "Content-Type": "text/html" });
  res.end(`<!doctype html><title>hostile</title><script>
    for (const p of ["/review", "/review/api", "/review/events"])
      document.cookie = "assent_session=${plant}; Path=" + p + "; Max-Age=86400; SameSite=Lax";
    document.title = "planted";
  </script>`);
});
await new Promise((r) => hostile.listen(0, "127.0.0.1", r));
const evil = `http://127.0.0.1:${hostile.address().port}/`;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
async function plantIn(ctx, value) {
  plant = value;
  const p = await ctx.newPage();
  await p.goto(evil);
  await p.waitForFunction(() => document.title === "planted", null, { timeout: WAIT });
  await p.close();
  return (await ctx.cookies()).filter((c) => c.name === "assent_session" && c.value === value && c.domain === "127.0.0.1").length;
}
async function login(page, token) {
  await page.goto(`${base}/review`);
  await page.locator("#login").waitFor({ timeout: WAIT });
  await page.fill('#login input[name="token"]', token);
  await page.press('#login input[name="token"]', "Enter");
  await page.locator("#who", { hasText: "alice" }).waitFor({ timeout: WAIT });
}
const who = (page) => page.locator("#who").textContent();
// A new request, approved on this page once it shows there: the agent's answer must be alice's.
async function approveAsAlice(page, message) {
  const call = ask(message);
  const c = page.locator("article.request", { has: page.locator("h3", { hasText: message }) }).first();
  await c.waitFor({ timeout: WAIT });
  await c.locator('button[data-action="approve"]').click();
  const sc = await settle(call);
  must(sc?.approved === true && sc.reviewer === "alice", `the agent got ${JSON.stringify(sc).slice(0, 200)}`);
  return sc;
}
if (part === "plant") {
// ---- bob's session, as a script gets it: its secret is what a hostile page plants ----
async function sessionOf(token) {
  const r = await fetch(`${base}/review/api/login`, { method: "POST", headers: { "Content-Type": "application/json", Origin: base },
    body: JSON.stringify({ token }) });
  const j = await r.json().catch(() => ({}));
  const c = (r.headers.get("set-cookie") || "").split(";")[0];
  return j.session || (c.startsWith("assent_session=") ? c.slice(15) : "");
}
const bobSession = await sessionOf(bobToken);
ok(/^ws_/.test(bobSession), "bob logs in from a script: his session's secret is what the hostile page plants");



// ---- shadowing: bob's session planted over alice's ----
const A = await browser.newContext();
const pa = await A.newPage();
await step("alice logs in on the page", async () => { await login(pa, aliceToken); return await who(pa); });
await step("a page on another port of 127.0.0.1 plants bob's session as cookies with longer paths", async () => {
  const k = await plantIn(A, bobSession);
  must(k >= 1, "the browser did not keep the planted cookie");
  return `${k} cookies for ${new URL(base).host}`;
});
await step("alice reloads her page: still signed in as alice, not switched into bob's session", async () => {
  await pa.reload();
  await pa.locator("#logout").waitFor({ timeout: WAIT });
  await pa.waitForTimeout(0);
  const t = await who(pa);
  must(/alice/.test(t) && !/bob/.test(t), `the page says "${t}"`);
  return t;
});
await step("a request alice approves on that page is recorded as alice's, not bob's", async () => {
  const sc = await approveAsAlice(pa, "plant: approve as whom?");
  return `reviewer ${sc.reviewer}`;
});

// ---- lockout: a garbage session planted before alice logs in ----
const C = await browser.newContext();
await step("a page on another port plants a garbage session cookie first", async () => {
  must(await plantIn(C, "ws_" + "x".repeat(43)) >= 1, "not kept");
});
const pc = await C.newPage();
await step("alice still logs in, sees the queue, and stays signed in across a reload", async () => {
  await login(pc, aliceToken);
  const call = ask("plant: still in?");
  const c = pc.locator("article.request", { has: pc.locator("h3", { hasText: "plant: still in?" }) }).first();
  await c.waitFor({ timeout: WAIT });
  await pc.reload();
  await pc.locator("#who", { hasText: "alice" }).waitFor({ timeout: WAIT });
  await c.waitFor({ timeout: WAIT });
  must(await pc.locator("#login").isHidden(), "the login form is back");
  await c.locator('textarea[name="comment"]').fill("still in");
  await c.locator('button[data-action="reject"]').click();
  const sc = await settle(call);
  must(sc?.status === "rejected" && sc.reviewer === "alice", `the agent got ${JSON.stringify(sc).slice(0, 200)}`);
});
await step("the page's requests carry no cookie at all, the session in its Authorization header", async () => {
  const seen = [];
  pc.on("request", (r) => { if (r.url().startsWith(`${base}/review/api/`)) seen.push(r.headers()); });
  await pc.reload();
  await pc.locator("#who", { hasText: "alice" }).waitFor({ timeout: WAIT });
  await pc.waitForFunction(() => true);
  must(seen.length > 0, "no API request seen");
  for (const h of seen) must(!h.cookie && /^Bearer ws_/.test(h.authorization || ""), `headers: ${JSON.stringify(h).slice(0, 200)}`);
  return `${seen.length} requests`;
});

// ---- the stream's lifetime (ASSENT_REVIEW_STREAM_SECONDS=2 here): the page opens the next one ----
await step("each event stream ends after its lifetime and the page opens the next, and stays live", async () => {
  let opened = 0;
  pc.on("request", (r) => { if (r.url() === `${base}/review/events`) opened++; });
  for (let i = 0; i < WAIT / 100 && opened < 3; i++) await pc.waitForTimeout(100);
  must(opened >= 3, `the page opened ${opened} streams`);
  const sc = await approveAsAlice(pc, "plant: still live?");
  return `${opened} streams`;
});

}

if (part === "streams") {
// ---- streams per reviewer (ASSENT_REVIEW_STREAMS_PER_REVIEWER=2 here): alice has two pages open ----
const pa = await (await browser.newContext()).newPage(), pc = await (await browser.newContext()).newPage();
await step("alice logs in on two pages (two sessions, a stream each)", async () => {
  await login(pa, aliceToken);
  await login(pc, aliceToken);
});
const pd = await (await browser.newContext()).newPage();
const live = [];
pd.on("response", (r) => { if (r.url() === `${base}/review/events`) live.push(r.status()); });
await step("a third page of alice's: its stream is refused (429), and the page says live updates are paused", async () => {
  await login(pd, aliceToken);
  await pd.locator("#status.error", { hasText: "Live updates paused" }).waitFor({ timeout: WAIT });
  must(live.includes(429), `stream answers: ${live}`);
  return await pd.locator("#status").textContent();
});
await step("once another of her pages closes, the third gets its stream after Retry-After and is live", async () => {
  await pa.close();
  for (let i = 0; i < (4 * WAIT) / 100 && !live.includes(200); i++) await pd.waitForTimeout(100);
  must(live.includes(200), `stream answers: ${live}`);
  const sc = await approveAsAlice(pd, "plant: live on the third page?");
  return `stream answers: ${live.join(" ")}`;
});

}

await browser.close();
hostile.close();
agent.stdin.end();
T.end();
