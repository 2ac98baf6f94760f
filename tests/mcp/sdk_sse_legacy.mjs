// The official SDK's client for the older HTTP+SSE transport (2024-11-05), as the
// Interactive Feedback MCP guide's Cursor example configures it (a /sse URL),
// against assentd with FEEDBACK_TRANSPORT=sse. Prints TAP.
// Usage: node sdk_sse_legacy.mjs STATE BUILD BASE_URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { execFileSync } from "node:child_process";

const [state, build, base] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const client = new Client({ name: "sse-legacy", version: "1.0.0" });
await client.connect(new SSEClientTransport(new URL(`${base}/sse`)));
ok(client.getServerVersion()?.name === "assent", "GET /sse, then initialize over POST /messages");
ok((await client.listTools()).tools.length === 7, "tools/list over the old transport (four, and three QA tools)");
const p = client.callTool({ name: "request_feedback", arguments: { type: "approval", message: "legacy: go?" } },
  undefined, { timeout: 60000 });
let sid;
for (let i = 0; i < 100 && !sid; i++) {
  sid = JSON.parse(assent("pending", "--json")).find((r) => r.message === "legacy: go?")?.session_id;
  if (!sid) await sleep(50);
}
assent("approve", sid);
const sc = (await p).structuredContent;
ok(sc?.approved === true && sc.session_id === sid && sc.approval_token, "request_feedback approved over the old transport, with a token");
await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
