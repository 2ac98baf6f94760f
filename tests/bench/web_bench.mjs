// make bench: the web reviewer under load (issue 7). A daemon with 1,000 requests pending
// (blocking request_feedback calls from the official SDK client over stdio, each with a
// context and a small diff) and 50 reviewer event streams open (50 reviewers logged in, each
// reading /review/events); then, in headless Chromium (Debian's, driven by playwright-core):
//   - time to first render: navigation start to the first request shown, and to the last
//     of the page's 100 (the page shows the oldest 100 whole and counts the rest), fresh page
//     each time, with the session already in the tab's sessionStorage;
//   - decision round trip: the reviewer clicks Approve on the oldest request; time until the
//     agent's call returns approved (in this process, one clock);
//   - resident memory of every assentd process (signer, mcp worker, review worker), idle, with
//     the 1,000 pending, with the 50 streams, and after the page runs.
// Figures only: nothing passes or fails on time. Exits 2 when something does not work.
// Usage: node tests/bench/web_bench.mjs [--build build] [--pending 1000] [--streams 50] [--rounds 10]
import { chromium } from "../mcp/node_modules/playwright-core/index.mjs";
import { Client } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js";
import { StdioClientTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const build = resolve(arg("build", "build"));
const PENDING = +arg("pending", 1000), STREAMS = +arg("streams", 50), ROUNDS = +arg("rounds", 10), RENDERS = 5;
const die = (m) => { console.error(`web_bench: ${m}`); process.exit(2); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const chromiumPath = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
if (!chromiumPath) die("Debian's chromium is not installed (make deps installs it)");

const T = mkdtempSync(join(tmpdir(), "assent-webbench-"));
const S = join(T, "state");
const assent = (...a) => execFileSync(`${build}/assent`, ["--state", S, ...a], { encoding: "utf8" });
const token = assent("reviewer", "add", "alice", "--web").trim().split("\n").pop();
const env = { ...process.env, FEEDBACK_SSE_PORT: "off", ASSENT_REVIEW_PORT: "0", FEEDBACK_TIMEOUT_SECONDS: "3600",
  ASSENT_MAX_PENDING_PER_AGENT: "100000", ASSENT_MAX_BLOCKING_PER_AGENT: "1024" }; // one agent holds the whole queue
const daemon = spawn(`${build}/assentd`, ["--state", S], { env, stdio: ["ignore", "ignore", "pipe"] });
let daemonErr = "";
daemon.stderr.on("data", (d) => { daemonErr = (daemonErr + d).slice(-4000); });
let base = null;
for (let i = 0; i < 200 && !base; i++) {
  try { const r = JSON.parse(readFileSync(join(S, "assentd.json"), "utf8")).review; if (r) base = `http://${r}`; } catch {}
  if (!base) await sleep(50);
}
if (!base) die(`the daemon did not open its reviewer listener: ${daemonErr}`);

let browser = null, agent = null;
const streams = [];
async function cleanup() {
  for (const s of streams) s.abort();
  await browser?.close().catch(() => {});
  await agent?.close().catch(() => {});
  daemon.kill("SIGTERM");
  await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.on("exit", r)));
  rmSync(T, { recursive: true, force: true });
}
process.on("uncaughtException", async (e) => { console.error(`web_bench: ${e.stack || e}`); await cleanup(); process.exit(2); });

// ---- memory of the daemon's processes ----
function rssKiB() {
  const pids = [daemon.pid];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, "utf8");
      if (+st.slice(st.lastIndexOf(")") + 2).split(" ")[1] === daemon.pid) pids.push(+d);
    } catch {}
  }
  let kib = 0;
  for (const p of pids) {
    try { kib += +(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] || 0); } catch {}
  }
  return { kib, n: pids.length };
}
const mib = (k) => (k / 1024).toFixed(1);
const mem = {};
await sleep(300);
mem.idle = rssKiB();

// ---- a session, and the API ----
async function login(tok = token) {
  const r = await fetch(`${base}/review/api/login`, { method: "POST", headers: { Origin: base, "Content-Type": "application/json" },
    body: JSON.stringify({ token: tok }) });
  if (r.status !== 200) die(`login: ${r.status} ${await r.text()}`);
  return (await r.json()).session; // the page sends it back as Authorization: Bearer
}
const secret = await login();
const auth = { Authorization: `Bearer ${secret}` };
const pendingCount = async () => (await (await fetch(`${base}/review/api/pending`, { headers: auth })).json()).pending;

// ---- 1,000 blocking calls from the SDK client ----
agent = new Client({ name: "web-bench-agent", version: "1.0.0" });
await agent.connect(new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", S], env }));
const answered = new Map(); // message -> time the call returned (ms, this clock)
const calls = new Map();
const diff = "--- a/main.tf\n+++ b/main.tf\n@@ -1,4 +1,4 @@\n resource \"aws_instance\" \"web\" {\n-  count = 2\n+  count = 3\n }\n";
for (let i = 0; i < PENDING; i++) {
  const message = `bench request ${String(i).padStart(4, "0")}: apply the plan for web-${i}`;
  calls.set(message, agent.callTool({ name: "request_feedback", arguments: {
    type: "approval", message, context: { env: "staging", change: i, risk: i % 7 ? "low" : "high", diff } } },
  undefined, { timeout: 3600_000 }).then((r) => { answered.set(message, performance.now()); return r; }, (e) => e));
}
const t0 = performance.now();
while ((await pendingCount()) < PENDING) {
  if (performance.now() - t0 > 180000) die(`only ${await pendingCount()} of ${PENDING} requests became pending`);
  await sleep(100);
}
await sleep(500);
mem.pending = rssKiB();

// ---- 50 event streams: 50 reviewers, each logged in ----
let events = 0;
for (let i = 0; i < STREAMS; i++) {
  const t = assent("reviewer", "add", `watcher-${i}`, "--web").trim().split("\n").pop();
  const c = await login(t);
  const ac = new AbortController();
  streams.push(ac);
  const r = await fetch(`${base}/review/events`, { headers: { Authorization: `Bearer ${c}`, Accept: "text/event-stream" }, signal: ac.signal });
  if (r.status !== 200) die(`event stream ${i}: ${r.status}`);
  (async () => { try { for await (const chunk of r.body) events += (String.fromCharCode(...chunk).match(/event: pending/g) || []).length; } catch {} })();
}
await sleep(1000);
mem.streams = rssKiB();
const eventsBefore = events;

// ---- the page's data alone: GET /review/api/pending (100 whole requests, 1,000 counted) ----
const apiMs = [];
let apiBytes = 0;
for (let i = 0; i < 5; i++) {
  const s = performance.now();
  const r = await fetch(`${base}/review/api/pending`, { headers: auth });
  apiBytes = (await r.arrayBuffer()).byteLength;
  apiMs.push(performance.now() - s);
}

// ---- the page ----
browser = await chromium.launch({ executablePath: chromiumPath, args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
const ctx = await browser.newContext();
// The tab holds the session as the page keeps it after a login (sessionStorage).
await ctx.addInitScript((v) => sessionStorage.setItem("assent_session", v), secret);
// Timed by the browser itself: navigation start to the first frame with requests in it (the
// page marks "assent-first-render" in requestAnimationFrame after its first render with cards),
// and how long that render took (its "assent-render" measure). Playwright's own polling is not
// in the figure.
const first = [], renderMs = [];
for (let i = 0; i < RENDERS; i++) {
  const page = await ctx.newPage();
  await page.goto(`${base}/review`);
  await page.waitForFunction((want) => performance.getEntriesByName("assent-first-render").length > 0 &&
    document.querySelectorAll("article.request").length >= want, Math.min(100, PENDING), { timeout: 120000 });
  const t = await page.evaluate(() => ({ paint: performance.getEntriesByName("assent-first-render")[0].startTime,
    render: performance.getEntriesByName("assent-render")[0]?.duration }));
  first.push(t.paint);
  renderMs.push(t.render);
  await page.close();
}

const page = await ctx.newPage();
await page.goto(`${base}/review`);
const rtt = [];
for (let i = 0; i < ROUNDS; i++) {
  const art = page.locator("article.request").first();
  await art.waitFor({ timeout: 120000 });
  const sid = await art.getAttribute("data-sid");
  const message = (await art.innerText()).match(/bench request \d{4}: apply the plan for web-\d+/)?.[0];
  if (!message || !calls.has(message)) die(`the oldest request on the page is not one of ours: ${message}`);
  const s = performance.now();
  await art.locator('button[data-action="approve"]').click();
  const r = await calls.get(message);
  if (!r?.structuredContent?.approved) die(`the agent's call did not return approved: ${JSON.stringify(r?.structuredContent || String(r)).slice(0, 300)}`);
  rtt.push(answered.get(message) - s);
  await page.waitForSelector(`article.request[data-sid="${sid}"]`, { state: "detached", timeout: 120000 });
}
mem.after = rssKiB();
const pushed = events - eventsBefore;

const stat = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const q = (p) => v[Math.min(v.length - 1, Math.ceil(p * v.length) - 1)];
  return `${q(0.5).toFixed(0)} / ${q(0.9).toFixed(0)} ms`;
};
console.log(`\nweb reviewer (make bench): ${PENDING} requests pending, ${STREAMS} reviewer event streams open, headless Chromium ${browser.version()}`);
console.log(`  GET /review/api/pending alone (${(apiBytes / 1024).toFixed(0)} KiB, median / p90 of 5):          ${stat(apiMs)}`);
console.log(`  time to first render: navigation start to the first frame with the page's 100 requests`);
console.log(`    (browser's clock, median / p90 of ${RENDERS}):                                 ${stat(first)}`);
console.log(`    of which rendering them (the page's script):                        ${stat(renderMs)}`);
console.log(`  decision click -> the agent's call returns approved (of ${ROUNDS}):     ${stat(rtt)}`);
console.log(`  events pushed to the ${STREAMS} streams meanwhile: ${pushed} (${(pushed / STREAMS).toFixed(1)} each)`);
console.log(`  resident memory of assentd (signer + 2 workers), MiB: idle ${mib(mem.idle.kib)}, ${PENDING} pending ${mib(mem.pending.kib)},` +
  ` + ${STREAMS} streams ${mib(mem.streams.kib)}, after the page runs ${mib(mem.after.kib)}`);
await cleanup();
process.exit(0);
