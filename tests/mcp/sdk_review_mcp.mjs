// A reviewer's own MCP client on the reviewer listener (/review/mcp): the official
// SDK client over Streamable HTTP with a reviewer token lists what waits and decides
// it, while an agent (the SDK over stdio) waits for the answer. Also refused: no
// token, an agent's key. Prints TAP. Usage: node sdk_review_mcp.mjs STATE BUILD URL REVIEWER_TOKEN AGENT_KEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [state, build, url, token, agentKey] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const reviewer = (bearer) => {
  const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
  return { client: new Client({ name: "reviewer-mcp", version: "1.0.0" }),
    transport: new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }) };
};

for (const [what, bearer] of [["without a token", null], ["with an agent's API key", agentKey]]) {
  const { client, transport } = reviewer(bearer);
  let refused = null;
  try { await client.connect(transport); } catch (e) { refused = String(e); }
  ok(refused !== null && /reviewer token is required|not accepted on the reviewer listener/.test(refused), `/review/mcp ${what}: the SDK cannot connect (${(refused || "connected!").slice(0, 120)})`);
  await client.close().catch(() => {});
}

const agent = new Client({ name: "agent-under-review", version: "1.0.0" });
// As another user than the daemon's (tests/lib.sh: ASSENT_TEST_AGENT_PREFIX).
const prefix = (process.env.ASSENT_TEST_AGENT_PREFIX || "").split(" ").filter(Boolean);
const argv = [...prefix, `${build}/assentd`, "--stdio", "--state", state];
await agent.connect(new StdioClientTransport({ command: argv[0], args: argv.slice(1) }));
const { client, transport } = reviewer(token);
await client.connect(transport);
ok(client.getServerVersion()?.name === "assent-review", "the reviewer's SDK client connects with a reviewer token");
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
ok(tools.join(",") === "list_pending_feedback,qa_get_feedback_statistics,qa_list_feedback,submit_feedback",
  `tools/list names the reviewer tools, the QA reports' reading ones with them (${tools})`);

const waits = (args) => agent.callTool({ name: "request_feedback", arguments: args }, undefined, { timeout: 60000 });
async function waitingFor(message) {
  for (let i = 0; i < 200; i++) {
    const r = await client.callTool({ name: "list_pending_feedback", arguments: {} });
    const hit = (r.structuredContent?.requests || []).find((x) => x.message === message);
    if (hit) return hit;
    await sleep(50);
  }
  return null;
}

const approval = waits({ type: "approval", message: "reviewer-mcp: rotate the signing key", context: { env: "prod" } });
const seen = await waitingFor("reviewer-mcp: rotate the signing key");
ok(seen && seen.context?.env === "prod" && seen.type === "approval", "list_pending_feedback shows the request with its context");
const sub = await client.callTool({ name: "submit_feedback", arguments: { session_id: seen?.session_id, approved: true, response: "ok from my editor" } });
ok(!sub.isError && sub.structuredContent?.outcome === "approved", `submit_feedback approves (${JSON.stringify(sub.structuredContent)})`);
const got = (await approval).structuredContent;
ok(got?.approved === true && got?.reviewer === "alice" && typeof got?.approval_token === "string",
  "the agent's call returns approved by alice, with a token");

const selection = waits({ type: "selection", message: "reviewer-mcp: which window?", options: ["now", "tonight"] });
const sel = await waitingFor("reviewer-mcp: which window?");
const bad = await client.callTool({ name: "submit_feedback", arguments: { session_id: sel?.session_id, approved: true, selection: 9 } });
ok(bad.isError && /option 9 does not exist/.test(JSON.stringify(bad.structuredContent)), "a selection out of range is an error naming it");
await client.callTool({ name: "submit_feedback", arguments: { session_id: sel?.session_id, approved: true, selection: 2 } });
const s2 = (await selection).structuredContent;
ok(s2?.status === "selected" && s2?.response === "tonight", `submit_feedback with selection 2 selects "tonight" (${s2?.response})`);

const rejected = waits({ type: "confirmation", message: "reviewer-mcp: drop the table?" });
const rj = await waitingFor("reviewer-mcp: drop the table?");
await client.callTool({ name: "submit_feedback", arguments: { session_id: rj?.session_id, approved: false, response: "not today" } });
const r3 = (await rejected).structuredContent;
ok(r3?.status === "rejected" && r3?.response === "not today", "submit_feedback with approved false rejects with the reason");

await client.close();
await agent.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
