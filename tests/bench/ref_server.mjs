// The reference server of the gateway benchmark (tests/bench/gateway_bench.py): an MCP stdio server
// written with the official TypeScript SDK (tests/mcp/node_modules, @modelcontextprotocol/sdk 1.32.2)
// that offers the same `request_feedback` input shape as `assentd --stdio`. No person ever answers
// it: each request is held pending (a Map entry with a deadline timer) until its timeout, then
// answered {"error":"timeout","approved":false,...}, which is what waiting for a person looks like
// with no person. It signs nothing and records nothing: it is the floor an SDK server starts from,
// not a competitor. Usage: node tests/bench/ref_server.mjs  (FEEDBACK_TIMEOUT_SECONDS, default 300)
import { randomBytes } from "node:crypto";
import { McpServer } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js";
import { StdioServerTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { TIMEOUT_MAX, inputSchema } from "./ref_tool.mjs";

const defaultTimeout = Number(process.env.FEEDBACK_TIMEOUT_SECONDS || 300);

const pending = new Map(); // session_id -> { deadline, timer, resolve }

const server = new McpServer({ name: "assent-bench-reference", version: "0.0.1" });
server.registerTool("request_feedback", {
  title: "Ask a human before acting",
  description: "Pause and ask a human reviewer before a consequential action. Proceed only if approved is true.",
  inputSchema,

}, async (args) => {
  const session_id = "req-" + randomBytes(16).toString("hex");
  const seconds = args.timeout_override ?? defaultTimeout;
  const deadline = Math.floor(Date.now() / 1000) + seconds;
  const answer = (o) => ({ content: [{ type: "text", text: JSON.stringify(o) }], structuredContent: o });
  const done = new Promise((resolve) => {
    const timer = setTimeout(() => {
      pending.delete(session_id);
      resolve({ session_id, status: "timeout", approved: false,
                timestamp: Math.floor(Date.now() / 1000), error: "timeout" });
    }, seconds * 1000);
    pending.set(session_id, { deadline, timer, resolve, args });
  });
  if (args.wait === false)
    return answer({ session_id, status: "pending", approved: false, deadline });
  return answer(await done);
});

await server.connect(new StdioServerTransport());
