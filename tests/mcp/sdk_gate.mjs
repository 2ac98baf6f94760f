// The gate end to end (issue 15) with the official SDK clients as the agent: assentd in front of
// the SDK test upstream tests/mcp/upstream_fs.mjs (upstream "fs"), driven over stdio (the
// assentd --stdio bridge) and Streamable HTTP (an agent key), by the SDK 1.32.2 client (2025-11-25)
// and the SDK 2.4 client pinned to 2026-07-28. For each of the four, one TAP line per check:
//   tools/list   fs__* next to (after) request_feedback, with the upstream's own schemas, titles,
//                descriptions and annotations (compared with a direct connection to the upstream)
//   reads        a `record calls` read forwarded once, the upstream's result, _meta gate facts, no
//                ledger entry; a plain `allow` read with request, decision, dispatch and outcome
//   deny         a delete of two files refused with the rule's reason; nothing reaches the upstream
//   ask          a write held: `assent pending`, `assent show` (text and JSON), /review/api/pending
//                and /review/mcp list_pending_feedback show its arguments, upstream, tool and digest;
//                approved through the page's API (login, CSRF header, POST /review/api/decide);
//                forwarded once; the upstream's result returned; its lifecycle on the ledger; and
//                once more in the page itself (headless Chromium) with the approve button
//   retry        the identical call again after that: held again as a new request, nothing
//                forwarded until a second approval, then exactly once more
//   token        a write under a `token yes` rule: its result's _meta carries an approval token
//                that assent-verify accepts against the ledger, for that session and call digest
//   reject       a write rejected (assent reject -m): isError with the reviewer's reason, nothing
//                forwarded
// Every answer the agent got is appended to CFG.transcript (JSON lines) for the shell test's grep
// for the upstream's credential.
// Usage: node sdk_gate.mjs CONFIG.json   (written by tests/integration/gateway_gate.sh: state, build,
//   policy, upstreams, url, key, review (http://HOST:PORT), reviewToken, callLog, root, node22,
//   transcript, runs: ["stdio:sdk1", "http:sdk1", "stdio:sdk2", "http:sdk2"], chromium: its path or "")
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Stdio1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as Http1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as Client2, StreamableHTTPClientTransport as Http2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as Stdio2 } from "@modelcontextprotocol/client/stdio";
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
let n = 0, failed = 0;
const ok = (cond, desc, detail = "") => {
  n++;
  if (!cond) failed++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}${cond || !detail ? "" : " (" + String(detail).replace(/\s+/g, " ").slice(0, 300) + ")"}`);
  return cond;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const short = (e) => String(e?.code ?? "") + " " + String(e?.message ?? e).replace(/\s+/g, " ").slice(0, 200);
const assent = (...args) => execFileSync(`${cfg.build}/assent`, ["--state", cfg.state, ...args], { encoding: "utf8" });
const record = (what, x) => appendFileSync(cfg.transcript, JSON.stringify({ what, x }) + "\n");
const GATE = "io.assent/gate";

// Canonical JSON (keys sorted) to compare objects whatever their key order.
const canon = (v) => Array.isArray(v) ? `[${v.map(canon).join(",")}]`
  : v && typeof v === "object" ? `{${Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",")}}`
  : JSON.stringify(v);

// ---- what reached the upstream: its call log, one `TOOL JSON` line per tools/call ----
function calls(tool, pred = () => true) {
  if (!existsSync(cfg.callLog)) return 0;
  return readFileSync(cfg.callLog, "utf8").split("\n").filter(Boolean).filter((l) => {
    const i = l.indexOf(" ");
    if (l.slice(0, i) !== tool) return false;
    try { return pred(JSON.parse(l.slice(i + 1))); } catch { return false; }
  }).length;
}

// ---- the ledger, as an auditor reads it ----
function ledger(sid) {
  const out = execFileSync(`${cfg.build}/assent-verify`, ["export", `${cfg.state}/ledger`], { encoding: "utf8", maxBuffer: 1 << 28 });
  return out.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((e) => !sid || e.entry.session_id === sid);
}
const kinds = (es) => es.map((e) => e.entry.kind).join(",");

// ---- the reviewer's page, as app.js speaks to it ----
function web(method, path, body, headers = {}) {
  const u = new URL(cfg.review);
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: {
      Origin: cfg.review, ...(data ? { "Content-Type": "application/json" } : {}), ...headers } }, (res) => {
      let b = "";
      res.on("data", (c) => (b += c));
      res.on("end", () => { let j = null; try { j = JSON.parse(b); } catch {} resolve({ status: res.statusCode, json: j, text: b }); });
    });
    req.on("error", reject);
    req.end(data);
  });
}
let page = null; // {auth, csrf}: one logged-in page session for the whole run
async function pageLogin() {
  if (page) return page;
  const r = await web("POST", "/review/api/login", { token: cfg.reviewToken });
  if (r.status !== 200 || !r.json?.csrf) throw new Error(`login: HTTP ${r.status} ${r.text.slice(0, 100)}`);
  page = { auth: { Authorization: `Bearer ${r.json.session}` }, csrf: r.json.csrf };
  return page;
}
async function pagePending() {
  const p = await pageLogin();
  const r = await web("GET", "/review/api/pending", undefined, p.auth);
  appendFileSync(cfg.transcript.replace(/\.jsonl$/, "") + ".review.jsonl", r.text + "\n");
  return r.json?.requests ?? [];
}
async function pageDecide(sid, outcome, text) {
  const p = await pageLogin();
  return web("POST", "/review/api/decide", { session_id: sid, outcome, ...(text ? { text } : {}) },
    { ...p.auth, "X-CSRF-Token": p.csrf });
}

// ---- the reviewer over MCP: /review/mcp list_pending_feedback ----
async function reviewMcpPending() {
  const c = new Client1({ name: "gate-reviewer", version: "1.0.0" });
  await c.connect(new Http1(new URL(`${cfg.review}/review/mcp`), { requestInit: { headers: { Authorization: `Bearer ${cfg.reviewToken}` } } }));
  try {
    const r = await c.callTool({ name: "list_pending_feedback", arguments: {} });
    appendFileSync(cfg.transcript.replace(/\.jsonl$/, "") + ".review.jsonl", JSON.stringify(r) + "\n");
    return r.structuredContent?.requests ?? [];
  } finally {
    await c.close().catch(() => {});
  }
}

// The held call whose arguments say path (and not one of the sessions in skip).
async function heldFor(path, skip = []) {
  for (let i = 0; i < 400; i++) {
    for (const r of JSON.parse(assent("pending", "--json"))) {
      if (r.type !== "call" || skip.includes(r.session_id)) continue;
      const j = JSON.parse(assent("show", r.session_id, "--json"));
      if (j.arguments?.path === path) return j;
    }
    await sleep(50);
  }
  throw new Error(`no held call for ${path} in assent pending`);
}

// ---- the clients ----
const ENV = { ...process.env, ASSENT_SINGLE_USER: "1" };
const BRIDGE = ["--stdio", "--state", cfg.state, "--policy", cfg.policy, "--upstreams", cfg.upstreams];
function connect(kind, sdk) {
  if (sdk === "sdk1") {
    const c = new Client1({ name: `gate-${kind}-sdk1`, version: "1.32.2" });
    const t = kind === "stdio" ? new Stdio1({ command: `${cfg.build}/assentd`, args: BRIDGE, env: ENV, stderr: "inherit" })
      : new Http1(new URL(cfg.url), { requestInit: { headers: { Authorization: `Bearer ${cfg.key}` } } });
    return c.connect(t).then(() => ({ c, call: (name, args) => c.callTool({ name, arguments: args }, undefined, { timeout: 120000 }),
      era: `2025 (server ${c.getServerVersion()?.name})`, good: c.getServerVersion()?.name === "assent" }));
  }
  const c = new Client2({ name: `gate-${kind}-sdk2`, version: "2.4.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const t = kind === "stdio" ? new Stdio2({ command: `${cfg.build}/assentd`, args: BRIDGE, env: ENV, stderr: "inherit" })
    : new Http2(new URL(cfg.url), { requestInit: { headers: { Authorization: `Bearer ${cfg.key}` } } });
  return c.connect(t, { timeout: 30000 }).then(() => ({ c, call: (name, args) => c.callTool({ name, arguments: args }, { timeout: 120000 }),
    era: `${c.getProtocolEra()} ${c.getNegotiatedProtocolVersion()} (server ${c.getServerVersion()?.name})`,
    good: c.getProtocolEra() === "modern" && c.getNegotiatedProtocolVersion() === "2026-07-28" && c.getServerVersion()?.name === "assent" }));
}

// The upstream's own tools, from a direct connection to it (no assent between).
async function directTools() {
  const c = new Client1({ name: "gate-direct", version: "1.0.0" });
  const script = fileURLToPath(new URL("./upstream_fs.mjs", import.meta.url));
  await c.connect(new Stdio1({ command: cfg.node22, args: [script, "--root", cfg.root],
    env: { PATH: process.env.PATH, UPSTREAM_SECRET: "direct-listing-only" }, stderr: "inherit" }));
  const t = (await c.listTools()).tools;
  await c.close();
  return t;
}

const text = (r) => (r?.content ?? []).filter((x) => x.type === "text").map((x) => x.text).join("\n");
const facts = (r) => r?._meta?.[GATE] ?? {};

async function run(kind, sdk, direct) {
  const tag = `${kind} ${sdk === "sdk1" ? "SDK 1.32.2 (2025-11-25)" : "SDK 2.4 (2026-07-28)"}`;
  const u = `${kind}-${sdk}`;
  let a;
  try {
    a = await connect(kind, sdk);
  } catch (e) {
    ok(false, `${tag}: connects`, short(e));
    return;
  }
  const step = async (desc, fn) => {
    try {
      await fn();
    } catch (e) {
      ok(false, `${tag}: ${desc}`, `threw: ${short(e)}`);
    }
  };
  const call = async (name, args) => { const r = await a.call(name, args); record(`${u} ${name}`, r); return r; };
  ok(a.good, `${tag}: connects (${a.era})`);

  await step("tools/list", async () => {
    const list = (await a.c.listTools()).tools;
    record(`${u} tools/list`, list);
    const names = list.map((t) => t.name);
    const rf = names.indexOf("request_feedback");
    const want = direct.map((t) => `fs__${t.name}`);
    ok(rf >= 0 && want.length === 5 && want.every((w) => names.indexOf(w) > rf),
      `${tag}: tools/list has ${want.join(", ")} after request_feedback`, names.join(","));
    const diff = direct.filter((d) => {
      const g = list.find((t) => t.name === `fs__${d.name}`);
      return !g || canon(g.inputSchema) !== canon(d.inputSchema) || g.title !== d.title || g.description !== d.description ||
        canon(g.annotations) !== canon(d.annotations);
    }).map((d) => d.name);
    ok(diff.length === 0 && direct.every((d) => d.annotations && d.title),
      `${tag}: each with the upstream's own inputSchema, title, description and annotations`, `differ: ${diff}`);
  });

  await step("a record-calls read", async () => {
    const path = `docs/readme-${u}.txt`, body = `the readme of ${u}\nsecond line\n`;
    writeFileSync(`${cfg.root}/${path}`, body);
    const r = await call("fs__read_file", { path });
    const f = facts(r);
    ok(!r.isError && text(r) === body, `${tag}: an allowed read (record calls) returns the upstream's result`, JSON.stringify(r));
    ok(calls("read_file", (x) => x.path === path) === 1, `${tag}: ... which reached the upstream exactly once`,
      `call log: ${calls("read_file", (x) => x.path === path)}`);
    ok(f.status === "forwarded" && f.upstream === "fs" && f.tool === "read_file" && /^req-/.test(f.session_id ?? "") &&
      f.decision_seq === undefined, `${tag}: ... _meta io.assent/gate says forwarded, fs, read_file, its session_id, no decision_seq`,
      JSON.stringify(f));
    ok(f.session_id && ledger(f.session_id).length === 0, `${tag}: ... and with record calls the ledger has no entry for it`,
      f.session_id && kinds(ledger(f.session_id)));
  });

  await step("a ledgered read", async () => {
    const dir = `dir-${u}`;
    mkdirSync(`${cfg.root}/${dir}`, { recursive: true });
    writeFileSync(`${cfg.root}/${dir}/one.txt`, "1");
    const r = await call("fs__list_directory", { path: dir });
    const f = facts(r);
    ok(!r.isError && text(r) === "[FILE] one.txt", `${tag}: an allowed read (plain allow) returns the upstream's listing`, JSON.stringify(r));
    ok(calls("list_directory", (x) => x.path === dir) === 1, `${tag}: ... forwarded once`);
    const es = ledger(f.session_id ?? "none");
    const by = Object.fromEntries(es.map((e) => [e.entry.kind, e]));
    ok(kinds(es) === "request,decision,dispatch,outcome", `${tag}: ... the ledger has request, decision, dispatch, outcome for its session_id`, kinds(es));
    ok(by.request?.entry.type === "call" && by.request.entry.upstream === "fs" && by.request.entry.tool === "list_directory" &&
      by.request.entry.arguments?.path === dir && by.dispatch?.entry.call === by.request.entry.action &&
      /^sha256:[0-9a-f]{64}$/.test(by.dispatch?.entry.call ?? "") && by.decision?.entry.outcome === "approved" &&
      by.outcome?.entry.status === "ok" && by.outcome.entry.result?.size > 0,
      `${tag}: ... request (call, fs, list_directory, its arguments), decision approved, dispatch naming the request's digest, outcome ok with the result's digest and size`,
      JSON.stringify(es.map((e) => e.entry)));
    ok(f.decision_seq === by.decision?.seq && f.outcome_seq === by.outcome?.seq,
      `${tag}: ... _meta's decision_seq and outcome_seq are those entries' sequence numbers`, JSON.stringify(f));
  });

  await step("a denied delete", async () => {
    const p1 = `del-${u}-1.txt`, p2 = `del-${u}-2.txt`;
    writeFileSync(`${cfg.root}/${p1}`, "keep me");
    writeFileSync(`${cfg.root}/${p2}`, "keep me too");
    const before = calls("delete_files");
    const r = await call("fs__delete_files", { paths: [p1, p2] });
    const f = facts(r);
    const line = readFileSync(cfg.policy, "utf8").split("\n").findIndex((l) => l.startsWith("deny upstream fs tool delete_files")) + 1;
    ok(line > 0 && r.isError === true && text(r) === `denied by the policy (rule ${line}): one file at a time; the call was not forwarded`,
      `${tag}: a delete of two files is denied with the rule's reason (rule ${line}, its line)`, JSON.stringify(r));
    ok(f.status === "denied" && Number.isInteger(f.decision_seq), `${tag}: ... _meta says denied, with its decision_seq`, JSON.stringify(f));
    ok(calls("delete_files") === before && before === 0 && existsSync(`${cfg.root}/${p1}`) && existsSync(`${cfg.root}/${p2}`),
      `${tag}: ... nothing reached the upstream (its call log has no delete_files) and both files are there`);
    const es = ledger(f.session_id ?? "none");
    ok(kinds(es) === "request,decision" && es[1].entry.outcome === "denied", `${tag}: ... the ledger has its request and the denial, no dispatch`, kinds(es));
  });

  const wpath = `w-${u}.txt`, wbody = `first line of ${u}\n\tsecond line, indented\nthird "quoted" line\n`;
  const wargs = { path: wpath, content: wbody };
  let held1 = null;
  await step("an asked write", async () => {
    const p = call("fs__write_file", wargs);
    const held = held1 = await heldFor(wpath);
    const sid = held.session_id;
    ok(calls("write_file", (x) => x.path === wpath) === 0 && !existsSync(`${cfg.root}/${wpath}`),
      `${tag}: a write is held (${sid}): nothing reached the upstream`);
    ok(assent("pending").includes(sid), `${tag}: ... assent pending lists it`);
    const show = assent("show", sid);
    const lines = show.split("\n");
    ok(lines.includes("upstream fs") && lines.some((l) => /^tool +write_file \(Write a file\)$/.test(l)) &&
      lines.some((l) => l.startsWith(`call     ${held.call} `)) && /^sha256:[0-9a-f]{64}$/.test(held.call) &&
      show.includes(`"path": "${wpath}"`) && show.includes(JSON.stringify(wbody).slice(1, -1)) &&
      show.includes(`---- content ----\n${wbody}`),
      `${tag}: ... assent show prints upstream fs, tool write_file, the call's digest and the arguments (content as a block)`, show);
    ok(canon(held.arguments) === canon(wargs) && held.upstream === "fs" && held.tool === "write_file" && held.action === held.call,
      `${tag}: ... assent show --json has the arguments as sent, and the digest as the action`, JSON.stringify(held));
    const onPage = (await pagePending()).find((x) => x.session_id === sid);
    ok(onPage && canon(onPage.arguments) === canon(wargs) && onPage.upstream === "fs" && onPage.tool === "write_file" &&
      onPage.call === held.call && onPage.tool_info?.annotations?.destructiveHint === true,
      `${tag}: ... /review/api/pending has the call's arguments, upstream, tool, digest and declared hints`, JSON.stringify(onPage));
    const onMcp = (await reviewMcpPending()).find((x) => x.session_id === sid);
    ok(onMcp && onMcp.type === "call" && JSON.stringify(onMcp).includes(wpath),
      `${tag}: ... /review/mcp list_pending_feedback lists it with its arguments`, JSON.stringify(onMcp));
    const d = await pageDecide(sid, "approved", `ok from the page (${u})`);
    ok(d.status === 200 && d.json?.ok === true && d.json.outcome === "approved", `${tag}: ... approved through the page's API`, d.text);
    const r = await p;
    const f = facts(r);
    ok(!r.isError && text(r) === `wrote ${Buffer.byteLength(wbody)} bytes to ${wpath}`,
      `${tag}: ... the agent gets the upstream's own result`, JSON.stringify(r));
    ok(f.status === "forwarded" && f.session_id === sid && Number.isInteger(f.decision_seq) && Number.isInteger(f.outcome_seq) &&
      f.approval_token === undefined,
      `${tag}: ... with the gate's facts (forwarded, its session_id, decision_seq, outcome_seq; no token: its rule asks for none)`,
      JSON.stringify(f));
    ok(calls("write_file", (x) => x.path === wpath) === 1 && readFileSync(`${cfg.root}/${wpath}`, "utf8") === wbody,
      `${tag}: ... forwarded exactly once, and the file has the content`, `call log: ${calls("write_file", (x) => x.path === wpath)}`);
    const es = ledger(sid);
    const by = Object.fromEntries(es.map((e) => [e.entry.kind, e]));
    ok(kinds(es) === "request,decision,dispatch,outcome" && by.request.entry.action === held.call &&
      by.dispatch.entry.call === held.call && by.decision.entry.outcome === "approved" &&
      by.decision.entry.reviewer?.name === "tester" && by.decision.seq === f.decision_seq && by.outcome.entry.status === "ok",
      `${tag}: ... the ledger: request (its digest), decision approved by tester, dispatch of that digest, outcome ok`,
      JSON.stringify(es.map((e) => e.entry)));
  });

  await step("the same call again", async () => {
    if (!held1) throw new Error("the asked write did not run");
    const p = call("fs__write_file", wargs);
    const held = await heldFor(wpath, [held1.session_id]);
    ok(held.session_id !== held1.session_id && held.call === held1.call,
      `${tag}: the identical call after its approval is held again, as a new request (${held.session_id}), same digest`);
    ok(calls("write_file", (x) => x.path === wpath) === 1, `${tag}: ... while held, the upstream has still seen it once`);
    const es0 = ledger(held.session_id);
    ok(kinds(es0) === "request", `${tag}: ... its ledger so far: a request only`, kinds(es0));
    assent("approve", held.session_id, "-m", "again");
    const r = await p;
    ok(!r.isError && facts(r).session_id === held.session_id && calls("write_file", (x) => x.path === wpath) === 2,
      `${tag}: ... a second approval forwards it once more: twice in all`, `call log: ${calls("write_file", (x) => x.path === wpath)}`);
    ok(ledger(held1.session_id).filter((e) => e.entry.kind === "dispatch").length === 1 &&
      ledger(held.session_id).filter((e) => e.entry.kind === "dispatch").length === 1,
      `${tag}: ... one dispatch entry per approval`);
  });

  await step("a write approved with a token", async () => {
    const path = `tok-${u}.txt`;
    const p = call("fs__write_file", { path, content: "with a token\n" });
    const held = await heldFor(path);
    assent("approve", held.session_id);
    const r = await p;
    const f = facts(r);
    const jwt = f.approval_token ?? "";
    ok(!r.isError && f.status === "forwarded" && jwt.split(".").length === 3,
      `${tag}: a write under a token yes rule: approved, forwarded, its _meta carries an approval token`, JSON.stringify(f));
    const keys = readdirSync(`${cfg.state}/keys`).filter((k) => /^token-.*\.pub$/.test(k)).map((k) => `${cfg.state}/keys/${k}`);
    const v = spawnSync(`${cfg.build}/assent-verify`, ["token", "-", "--aud", "assent", ...keys.flatMap((k) => ["--key", k]),
      "--ledger", `${cfg.state}/ledger`], { input: jwt, encoding: "utf8" });
    const claims = jwt ? JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString()) : {};
    ok(v.status === 0 && claims.session_id === held.session_id && claims.action === held.call,
      `${tag}: ... the token verifies offline against the ledger, for this session and the call's digest`,
      `exit ${v.status} ${v.stderr} ${JSON.stringify(claims).slice(0, 200)}`);
  });

  await step("a rejected write", async () => {
    const path = `r-${u}.txt`;
    const p = call("fs__write_file", { path, content: "should never be written\n" });
    const held = await heldFor(path);
    assent("reject", held.session_id, "-m", `not this file (${u})`);
    const r = await p;
    const f = facts(r);
    ok(r.isError === true && text(r) === `rejected by tester: not this file (${u}); the call was not forwarded`,
      `${tag}: a rejected write: isError with the reviewer's reason`, JSON.stringify(r));
    ok(f.status === "rejected" && f.session_id === held.session_id && Number.isInteger(f.decision_seq),
      `${tag}: ... _meta says rejected, with its decision_seq`, JSON.stringify(f));
    ok(calls("write_file", (x) => x.path === path) === 0 && !existsSync(`${cfg.root}/${path}`),
      `${tag}: ... nothing reached the upstream, no file`);
    ok(kinds(ledger(held.session_id)) === "request,decision", `${tag}: ... the ledger: request and decision, no dispatch`,
      kinds(ledger(held.session_id)));
  });
  await a.c.close().catch(() => {});
}

// The reviewer's page itself in headless Chromium (Debian's, driven by playwright-core): a write
// held for the SDK 1.x client over HTTP shows in its card's Tool call block (upstream, tool, the
// call's digest, the arguments), the client hears progress while it waits, and the approve button
// forwards it once.
async function browserRun() {
  const tag = "http SDK 1.32.2 (2025-11-25), the page in Chromium";
  let chromium;
  try {
    ({ chromium } = await import("playwright-core"));
  } catch (e) {
    ok(false, `${tag}: playwright-core loads`, short(e));
    return;
  }
  const browser = await chromium.launch({ executablePath: cfg.chromium, args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
  const c = new Client1({ name: "gate-browser-agent", version: "1.32.2" });
  try {
    await c.connect(new Http1(new URL(cfg.url), { requestInit: { headers: { Authorization: `Bearer ${cfg.key}` } } }));
    const path = "w-browser.txt", body = "written after a click\n";
    let progress = 0;
    const p = c.callTool({ name: "fs__write_file", arguments: { path, content: body } }, undefined,
      { timeout: 120000, resetTimeoutOnProgress: true, onprogress: () => { progress++; } });
    const held = await heldFor(path);
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${cfg.review}/review`);
    await page.fill('#login input[name="token"]', cfg.reviewToken);
    await page.press('#login input[name="token"]', "Enter");
    const card = page.locator(`article.request[data-sid="${held.session_id}"]`);
    await card.waitFor({ timeout: 30000 });
    const block = card.locator(".block.call");
    const t = (await block.textContent()) ?? "";
    appendFileSync(cfg.transcript.replace(/\.jsonl$/, "") + ".review.jsonl", JSON.stringify({ page: await page.content() }) + "\n");
    const args = (await block.locator("pre.arguments").textContent()) ?? "";
    ok(t.includes("Tool call") && t.includes("fs") && t.includes("write_file (Write a file)") && t.includes(held.call) &&
      t.includes("destructiveHint") && args.includes(`"path": "${path}"`) && args.includes("written after a click"),
      `${tag}: the held write's card shows upstream, tool, declared hints, the call's digest and the arguments`, t);
    for (let i = 0; i < 600 && progress === 0; i++) await sleep(100); // the gateway's progress comes every 10 s
    ok(progress > 0, `${tag}: ... the agent's blocked call gets progress notifications meanwhile (${progress})`);
    ok(calls("write_file", (x) => x.path === path) === 0, `${tag}: ... nothing forwarded before the click`);
    await card.locator('button[data-action="approve"]').click();
    const r = await p;
    record("browser fs__write_file", r);
    ok(!r.isError && text(r) === `wrote ${Buffer.byteLength(body)} bytes to ${path}` && facts(r).session_id === held.session_id,
      `${tag}: ... approve in the page: the agent gets the upstream's result`, JSON.stringify(r));
    ok(calls("write_file", (x) => x.path === path) === 1, `${tag}: ... forwarded exactly once`);
    const dec = ledger(held.session_id).find((e) => e.entry.kind === "decision");
    ok(dec?.entry.outcome === "approved" && dec.entry.reviewer?.channel === "web", `${tag}: ... the decision is the web's`, JSON.stringify(dec?.entry));
  } catch (e) {
    ok(false, `${tag}`, `threw: ${short(e)}`);
  } finally {
    await c.close().catch(() => {});
    await browser.close().catch(() => {});
  }
}

let direct = [];
try {
  direct = await directTools();
} catch (e) {
  ok(false, "the upstream's own tools/list, directly", short(e));
}
ok(direct.length === 5, `the upstream lists its 5 tools when called directly (${direct.map((t) => t.name)})`);
mkdirSync(`${cfg.root}/docs`, { recursive: true });
for (const r of cfg.runs) {
  const [kind, sdk] = r.split(":");
  await run(kind, sdk, direct);
}
if (cfg.chromium) await browserRun();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
