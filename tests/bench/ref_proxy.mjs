// The reference proxy of the gate's bench (tests/bench/gate_bench.py), the one issue 15 names:
// "an SDK reference proxy with a policy lookup and an fsynced line per call". Written on the
// official SDK (@modelcontextprotocol/sdk 1.32.2): an MCP server to the agent (stdio, or
// Streamable HTTP with --http) and an MCP client to one upstream over stdio (by default
// tests/mcp/upstream_fs.mjs, named `fs`). It lists the upstream's tools as `fs__TOOL` (schemas,
// titles and annotations as the upstream declared them) and, for each tools/call:
//   1. looks the call up in a small rule table (first match wins, else the default),
//   2. appends one JSON line for the call to the call log and fsyncs it (fs.fsyncSync: durable
//      before anything is forwarded, as assent's dispatch entry is),
//   3. allowed: forwards the call and returns the upstream's result as it is;
//      denied: answers isError with the rule's reason and forwards nothing.
// It checks nothing else and keeps no ledger: a floor to compare assent with, not a competitor.
//
// Usage: node tests/bench/ref_proxy.mjs --policy RULES.json --log CALLS.jsonl [--http] [--name fs]
//                                       [-- UPSTREAM_COMMAND ARG...]
//   RULES.json: {"rules": [{"upstream": GLOB, "tool": GLOB, "action": "allow"|"deny",
//                "reason": "..."}], "default": "allow"|"deny"}   (GLOB: * and ?; absent = *)
//   --http: Streamable HTTP on 127.0.0.1, a free port, printed as `PORT n` on stdout.
//   The upstream inherits this process's environment (its UPSTREAM_SECRET, UPSTREAM_CALL_LOG...).
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js";
import { StdioClientTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js";
import { Server } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js";
import { StdioServerTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";
import { serveHttp } from "../mcp/mcp_http.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
const opts = dash >= 0 ? argv.slice(0, dash) : argv;
const upstreamCmd = dash >= 0 ? argv.slice(dash + 1) : [process.execPath, join(here, "..", "mcp", "upstream_fs.mjs")];
const arg = (name) => {
  const i = opts.indexOf(name);
  return i >= 0 ? opts[i + 1] : undefined;
};
const policyPath = arg("--policy"), logPath = arg("--log");
const name = arg("--name") ?? "fs";
if (!policyPath || !logPath || upstreamCmd.length === 0) {
  process.stderr.write("usage: ref_proxy.mjs --policy RULES.json --log CALLS.jsonl [--http] [--name fs] [-- CMD ARG...]\n");
  process.exit(2);
}

// ---- the policy: a rule table, globs compiled once ----
const glob = (g) => new RegExp("^" + String(g ?? "*").replace(/[.+^${}()|[\]\\]/g, "\\$&")
  .replace(/\*/g, ".*").replace(/\?/g, ".") + "$");
const table = JSON.parse(readFileSync(policyPath, "utf8"));
const rules = (table.rules ?? []).map((r, i) => {
  if (r.action !== "allow" && r.action !== "deny") throw new Error(`rule ${i + 1}: action must be allow or deny`);
  return { n: i + 1, up: glob(r.upstream), tool: glob(r.tool), action: r.action, reason: r.reason };
});
const fallback = table.default === "allow" ? "allow" : "deny";
function decide(upstream, tool) {
  for (const r of rules) if (r.up.test(upstream) && r.tool.test(tool)) return r;
  return { n: 0, action: fallback, reason: "no rule matched: the default" };
}

// ---- the call log: one line per call, fsynced before the call goes on ----
const logFd = openSync(logPath, "a", 0o600);
let seq = 0;
function record(entry) {
  writeSync(logFd, JSON.stringify(entry) + "\n");
  fsyncSync(logFd);
}
process.on("exit", () => closeSync(logFd));

// ---- the upstream ----
const upstream = new Client({ name: "assent-ref-proxy", version: "1.0.0" });
await upstream.connect(new StdioClientTransport({ command: upstreamCmd[0], args: upstreamCmd.slice(1),
  env: { ...process.env }, stderr: "inherit" }));
upstream.onclose = () => {
  process.stderr.write("ref_proxy: the upstream closed\n");
  process.exit(1);
};
const { tools } = await upstream.listTools();
const exposed = tools.map((t) => ({ ...t, name: `${name}__${t.name}` }));
const prefix = `${name}__`;

function newServer() {
  const server = new Server({ name: "assent-ref-proxy", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: exposed }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const full = req.params.name;
    if (!full.startsWith(prefix)) return { content: [{ type: "text", text: `unknown tool ${full}` }], isError: true };
    const tool = full.slice(prefix.length);
    const rule = decide(name, tool);
    record({ seq: seq++, time: Date.now(), upstream: name, tool, arguments: req.params.arguments ?? {},
      decision: rule.action, rule: rule.n });
    if (rule.action === "deny")
      return { content: [{ type: "text", text: `denied by rule ${rule.n}: ${rule.reason ?? "denied"}` }], isError: true };
    return await upstream.callTool({ name: tool, arguments: req.params.arguments ?? {} });
  });
  return server;
}

if (opts.includes("--http")) {
  await serveHttp(newServer);
} else {
  await newServer().connect(new StdioServerTransport());
  process.stdin.on("end", () => process.exit(0)); // the agent left: so does the proxy (and its upstream)
}
