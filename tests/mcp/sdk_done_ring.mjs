// The signer keeps the answers of the last 4,096 decided requests for get_feedback (an
// hour each), and of those at most 1,024 per requester, its own oldest dropped first (so
// one agent's flood never pushes out another's approval). Through the official SDK:
// 4,200 requests the policy allows at once, then get_feedback for the newest, the oldest
// kept, and the two just before it, which must be gone. Prints TAP.
// Usage: node sdk_done_ring.mjs STATE BUILD (the daemon runs, its policy allows
// `type confirmation` with context.readonly = true)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [state, build] = process.argv.slice(2);
const KEPT = 1024, N = 4200; // one requester's share (DONE_PER_OWNER in gateway/signer/signer.c)
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };

const client = new Client({ name: "sdk-done-ring", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", state],
  env: { ...process.env }, stderr: "inherit" }));
const sids = [];
for (let i = 0; i < N; i += 16) {
  const rs = await Promise.all(Array.from({ length: Math.min(16, N - i) }, (_, k) => client.callTool({
    name: "request_feedback", arguments: { type: "confirmation", message: `ring ${i + k}`, context: { readonly: true } } })));
  for (const r of rs) sids.push(r.structuredContent?.status === "approved" ? r.structuredContent.session_id : null);
}
ok(sids.every(Boolean), `${N} requests allowed at once by the policy`);
const status = async (i) => {
  const r = await client.callTool({ name: "get_feedback", arguments: { session_id: sids[i] } });
  return r.isError ? "gone" : r.structuredContent?.status;
};
ok(await status(N - 1) === "approved", "get_feedback: the newest answer is kept");
ok(await status(N - KEPT) === "approved", `get_feedback: the ${KEPT}th newest is kept`);
ok(await status(N - KEPT - 1) === "gone", `get_feedback: the one before it is gone (its own oldest goes first)`);
ok(await status(0) === "gone", "get_feedback: the first of all is gone");
await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
