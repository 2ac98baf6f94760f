// The load driver of tests/bench/gate_bench.py: a raw JSON-RPC client in Node (no SDK: the SDK
// client validates every result against schemas and would measure itself), so the figures are
// the server's. It opens one MCP session (initialize + notifications/initialized, 2025-11-25),
// then keeps N tools/call requests in flight (each answer sends the next) for a time, checks
// every answer (a result whose text is what was sent, not isError), and prints one JSON line:
//   {"n", "seconds", "rate", "p50_ms", "p99_ms", "errors", "first_error", "client_cpu_s"}
// Usage:
//   node gate_client.mjs --inflight N --seconds S --tool NAME [--warmup K] --stdio CMD ARG...
//   node gate_client.mjs --inflight N --seconds S --tool NAME [--warmup K] --url URL [--bearer KEY]
// --args JSON: the tool's arguments instead of {"text": "bench"}; --expect approved: an answer is
// right when its structuredContent says approved (request_feedback), not when it echoes the text.
// Over stdio it starts CMD and speaks newline-delimited JSON on its pipes; over HTTP it POSTs
// each request on a keep-alive connection of its own (N connections for N in flight), with the
// session's Mcp-Session-Id, and reads a JSON or an SSE answer.
// tests/bench/null_server.mjs answers the same calls with nothing behind them: the driver's
// own cost (gate_bench.py prints it as the "client floor").
import { spawn } from "node:child_process";
import { Agent, request } from "node:http";

const argv = process.argv.slice(2);
const stdioAt = argv.indexOf("--stdio");
const own = stdioAt >= 0 ? argv.slice(0, stdioAt) : argv;
const arg = (k, d) => {
  const i = own.indexOf(k);
  return i >= 0 ? own[i + 1] : d;
};
const inflight = Number(arg("--inflight", 1));
const seconds = Number(arg("--seconds", 3));
const warmup = Number(arg("--warmup", 200));
const tool = arg("--tool", "echo");
const url = arg("--url");
const bearer = arg("--bearer");
const toolArgs = arg("--args");
const expect = arg("--expect", "echo");
const cmd = stdioAt >= 0 ? argv.slice(stdioAt + 1) : null;
if ((!url && !cmd?.length) || !(inflight >= 1)) {
  process.stderr.write("usage: gate_client.mjs --inflight N --seconds S --tool NAME (--url URL [--bearer K] | --stdio CMD...)\n");
  process.exit(2);
}
const TEXT = "bench";
const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "gate-bench", version: "1" } };

// ---- transports: send(msg) -> Promise<answer> ----
function stdioTransport() {
  const p = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  let buf = "";
  p.stdout.setEncoding("utf8");
  p.stdout.on("data", (c) => {
    buf += c;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let m;
      try { m = JSON.parse(line); } catch { continue; }
      const w = m && m.id !== undefined && waiting.get(m.id);
      if (w) {
        waiting.delete(m.id);
        w(m);
      }
    }
  });
  const died = new Promise((r) => p.on("exit", (code, sig) => r({ error: { message: `server exited ${code ?? sig}` } })));
  died.then((e) => { for (const w of waiting.values()) w(e); waiting.clear(); });
  return {
    send(msg) {
      const ans = msg.id === undefined ? Promise.resolve(null) : new Promise((r) => waiting.set(msg.id, r));
      p.stdin.write(JSON.stringify(msg) + "\n");
      return ans;
    },
    close() { p.stdin.end(); setTimeout(() => p.kill(), 2000).unref(); },
  };
}

function httpTransport() {
  const u = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets: inflight });
  let sid;
  const base = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  if (bearer) base.Authorization = `Bearer ${bearer}`;
  return {
    send(msg) {
      const body = JSON.stringify(msg);
      const headers = { ...base, "Content-Length": Buffer.byteLength(body) };
      if (sid) {
        headers["Mcp-Session-Id"] = sid;
        headers["MCP-Protocol-Version"] = INIT.protocolVersion;
      }
      return new Promise((resolve) => {
        const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent, headers }, (res) => {
          if (res.headers["mcp-session-id"]) sid = res.headers["mcp-session-id"];
          let data = "";
          res.setEncoding("utf8");
          res.on("data", (c) => { data += c; });
          res.on("end", () => {
            if (msg.id === undefined) return resolve(res.statusCode < 300 ? null : { error: { message: `HTTP ${res.statusCode}` } });
            if (res.statusCode !== 200) return resolve({ error: { message: `HTTP ${res.statusCode}: ${data.slice(0, 200)}` } });
            const found = (res.headers["content-type"] ?? "").includes("text/event-stream")
              ? data.split("\n").filter((l) => l.startsWith("data:")).map((l) => {
                try { return JSON.parse(l.slice(5)); } catch { return null; }
              }).find((m) => m && m.id === msg.id)
              : (() => { try { return JSON.parse(data); } catch { return null; } })();
            resolve(found ?? { error: { message: `no answer in: ${data.slice(0, 200)}` } });
          });
        });
        req.on("error", (e) => resolve({ error: { message: e.message } }));
        req.end(body);
      });
    },
    close() { agent.destroy(); },
  };
}

const t = url ? httpTransport() : stdioTransport();
let id = 0;
const ARGS = toolArgs ? JSON.parse(toolArgs) : { text: TEXT };
const call = () => t.send({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: tool, arguments: ARGS } });
const wrong = (a) => {
  if (!a) return "no answer";
  if (a.error) return `error: ${a.error.message ?? JSON.stringify(a.error)}`;
  if (a.result?.isError) return `isError: ${JSON.stringify(a.result.content).slice(0, 200)}`;
  if (expect === "approved")
    return a.result?.structuredContent?.approved === true ? null : `not approved: ${JSON.stringify(a.result).slice(0, 200)}`;
  if (a.result?.content?.[0]?.text !== TEXT) return `unexpected result: ${JSON.stringify(a.result).slice(0, 200)}`;
  return null;
};

const init = await t.send({ jsonrpc: "2.0", id: ++id, method: "initialize", params: INIT });
if (!init?.result) {
  console.log(JSON.stringify({ n: 0, errors: 1, first_error: `initialize: ${JSON.stringify(init).slice(0, 300)}` }));
  t.close();
  process.exit(1);
}
await t.send({ jsonrpc: "2.0", method: "notifications/initialized" });
for (let i = 0; i < warmup; i++) {
  const why = wrong(await call());
  if (why) {
    console.log(JSON.stringify({ n: 0, errors: 1, first_error: `warm-up call: ${why}` }));
    t.close();
    process.exit(1);
  }
}

const lat = [];
let errors = 0, firstError = null;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const end = t0 + BigInt(Math.round(seconds * 1e9));
async function lane() {
  for (;;) {
    const s = process.hrtime.bigint();
    if (s >= end) return;
    const why = wrong(await call());
    lat.push(Number(process.hrtime.bigint() - s) / 1e6);
    if (why) {
      errors++;
      firstError ??= why;
    }
  }
}
await Promise.all(Array.from({ length: inflight }, lane));
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] : null);
console.log(JSON.stringify({ n: lat.length, seconds: wall, rate: lat.length / wall, p50_ms: pct(50), p99_ms: pct(99),
  errors, first_error: firstError, client_cpu_s: (cpu.user + cpu.system) / 1e6 }));
t.close();
setTimeout(() => process.exit(0), 100).unref();
