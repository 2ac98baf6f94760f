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
import * as z from "../mcp/node_modules/zod/index.js";

const TIMEOUT_MAX = 86400;
const defaultTimeout = Number(process.env.FEEDBACK_TIMEOUT_SECONDS || 300);
const subject = z.object({
  name: z.string().min(1).max(256),
  digest: z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict().optional(),
  content: z.string().optional(),
}).strict();

const pending = new Map(); // session_id -> { deadline, timer, resolve }

const server = new McpServer({ name: "assent-bench-reference", version: "0.0.1" });
server.registerTool("request_feedback", {
  title: "Ask a human before acting",
  description: "Pause and ask a human reviewer before a consequential action. Proceed only if approved is true.",
  inputSchema: {
    type: z.enum(["approval", "input", "selection", "confirmation"]),
    message: z.string().min(1).max(65536),
    context: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
    options: z.array(z.string().min(1).max(1024)).min(1).max(32).optional(),
    default: z.string().max(4096).optional(),
    timeout_override: z.number().int().min(1).max(TIMEOUT_MAX).optional(),
    subject: z.union([subject, z.array(subject).min(1).max(16)]).optional(),
    audience: z.string().regex(/^[A-Za-z0-9._:/-]{1,128}$/).optional(),
    wait: z.boolean().optional(),
  },
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
