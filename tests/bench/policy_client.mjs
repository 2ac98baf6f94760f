// The client of the policy end-to-end bench (tests/bench/policy_e2e_bench.py): the official
// TypeScript SDK's Client over StdioClientTransport (tests/mcp/node_modules, @modelcontextprotocol/sdk)
// spawning one MCP stdio server (assentd --stdio, or the reference ref_policy_server.mjs), then
// keeping CONCURRENCY request_feedback calls in flight for SECONDS (after WARMUP seconds not
// counted). Every call must come back approved with an approval_token (a policy decision);
// anything else is counted as an error and the run fails.
// Prints one JSON line: {"calls","seconds","all_calls" (warm-up included),"client_cpu_s" (this
// process),"calls_per_s","p50_ms","p99_ms","max_ms","errors","warmup_errors","connect_ms","first_error"}.
// Usage: node policy_client.mjs SECONDS CONCURRENCY WARMUP -- COMMAND [ARG...]
//   The server inherits this process's environment.
import { Client } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js";
import { StdioClientTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js";

const argv = process.argv.slice(2);
const dd = argv.indexOf("--");
if (dd !== 3 || argv.length < 5) {
  console.error("usage: node policy_client.mjs SECONDS CONCURRENCY WARMUP -- COMMAND [ARG...]");
  process.exit(2);
}
const seconds = Number(argv[0]), concurrency = Number(argv[1]), warmup = Number(argv[2]);
const [command, ...args] = argv.slice(4);

const t0 = performance.now();
const client = new Client({ name: "policy-bench", version: "1.0.0" });
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
await client.connect(transport);
const connect_ms = performance.now() - t0;

let seq = 0, errors = 0, first_error = null;
function args_(i) {
  return { type: "approval", message: `bench ${i}: deploy web-frontend to staging`,
           context: { command: `kubectl rollout restart deployment/web-frontend -n staging-${i % 7}`, risk: "low" } };
}
async function one() {
  const i = seq++;
  const t = performance.now();
  try {
    const r = await client.callTool({ name: "request_feedback", arguments: args_(i) }, undefined, { timeout: 30000 });
    const sc = r.structuredContent;
    if (!sc || sc.approved !== true || typeof sc.approval_token !== "string" || r.isError) {
      errors++;
      first_error ??= JSON.stringify(r).slice(0, 300);
    }
  } catch (e) {
    errors++;
    first_error ??= String(e).slice(0, 300);
  }
  return performance.now() - t;
}

async function run(ms, lat) {
  const end = performance.now() + ms;
  let n = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const l = await one();
      n++;
      if (lat)
        lat.push(l);
    }
  };
  const t = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { n, el: (performance.now() - t) / 1000 };
}

await run(warmup * 1000, null);
const werr = errors;
const lat = [];
const { n, el } = await run(seconds * 1000, lat);
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.ceil(p * lat.length) - 1)] : null);
const cpu = process.cpuUsage();
const out = { calls: n, seconds: el, all_calls: seq, client_cpu_s: (cpu.user + cpu.system) / 1e6, calls_per_s: n / el, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: lat.at(-1) ?? null,
              errors, warmup_errors: werr, connect_ms, first_error };
console.log(JSON.stringify(out));
await client.close();
process.exit(errors ? 1 : 0);
