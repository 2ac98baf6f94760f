// The conformance fixture upstream (issue 15): an MCP server on the official SDK exposing the
// fixture tools, resources and prompts that the conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12) calls in its server scenarios, each doing
// what that scenario's "Server Implementation Requirements" (in the suite's dist/index.js) ask.
// What it serves is written once, SDK-free, in fixture_defs.mjs; this file serves it with SDK
// 1.32.2's low-level Server (raw JSON Schemas go out as written): over stdio, and over HTTP for
// 2025 clients (sessions); 2026-07-28 requests over HTTP go to SDK 2.4 (fixture_modern.mjs).
// tests/integration/conformance_fixture.sh runs the suite against it directly, and through
// assentd with this server as a stdio upstream (`"prefix": ""`: the tools keep their names).
//
// Usage: node tests/mcp/upstream_fixture.mjs [--http]
//   stdio by default; --http: Streamable HTTP on 127.0.0.1 (2025 sessions, Host/Origin checked
//   against 127.0.0.1:PORT and localhost:PORT, an in-memory event store so that a closed SSE
//   stream can be resumed; 2026-07-28 per-request), a free port printed as `PORT n` (env
//   FIXTURE_PORT chooses one).
// Env UPSTREAM_CALL_LOG: one line `TOOL JSON-args` per tools/call, as upstream_fs.mjs writes.
//
// What it serves (scenario -> what it needs):
//   tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content: test_simple_text,
//     test_image_content, test_audio_content, test_embedded_resource, test_multiple_content_types
//   tools-call-with-logging: test_tool_with_logging (3 info messages, 50 ms apart)
//   tools-call-error: test_error_handling (isError)
//   tools-call-with-progress: test_tool_with_progress (0, 50, 100 of 100 on the call's token)
//   tools-call-sampling: test_sampling {prompt} (sampling/createMessage to the caller)
//   tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums:
//     test_elicitation {message}, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums
//   json-schema-2020-12: json_schema_2020_12_tool (a 2020-12 inputSchema, $defs, $anchor,
//     allOf/anyOf, if/then/else, additionalProperties false)
//   server-sse-polling: test_reconnection (closes the call's SSE stream, answers after the resume)
//   resources-*: test://static-text, test://static-binary, test://watched-resource, the template
//     test://template/{id}/data; subscribe/unsubscribe; an unknown URI is -32602 with data.uri
//   prompts-*: test_simple_prompt, test_prompt_with_arguments {arg1, arg2},
//     test_prompt_with_embedded_resource {resourceUri}, test_prompt_with_image
//   completion-complete: completion/complete over prompt and template arguments
//   logging-set-level: logging/setLevel
//   input-required-result-*: test_input_required_result_elicitation, _sampling, _list_roots,
//     _request_state, _multiple_inputs, _multi_round, _tampered_state, _capabilities and the prompt
//     test_input_required_result_prompt (2026-07-28: input_required results, fixture_modern.mjs;
//     here, their 2025 form: the same questions sent to the caller during the call)
//   server-stateless's diagnostic tools (test_missing_capability, ...): 2026-07-28 only
// Over stdio and 2025 HTTP a server-to-client request (sampling, elicitation, roots) goes to the
// caller; a 2026-07-28 request has none. Not served: the tasks extension's fixtures.
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { createInterface } from "node:readline";
import {
  CallToolRequestSchema, CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema, ListRootsResultSchema,
  GetPromptRequestSchema, ListPromptsRequestSchema, ListResourceTemplatesRequestSchema, ListResourcesRequestSchema,
  ListToolsRequestSchema, McpError, ReadResourceRequestSchema, SetLevelRequestSchema, SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { serveHttp } from "./mcp_http.mjs";
import { modernFetch, modernLine } from "./fixture_modern.mjs";
import { FixtureError, TEMPLATE, callTool, complete, getPrompt, listPrompts, listResources, listTools,
  readResource } from "./fixture_defs.mjs";

const callLog = process.env.UPSTREAM_CALL_LOG;
export const CAPABILITIES = { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true }, logging: {}, completions: {} };
// a fixture lookup that failed becomes the SDK's protocol error
const sdkErrors = (fn) => async (...a) => {
  try {
    return await fn(...a);
  } catch (e) {
    if (e instanceof FixtureError) throw new McpError(e.code, e.message, e.data);
    throw e;
  }
};
const RESULT_SCHEMA = { "sampling/createMessage": CreateMessageResultSchema, "elicitation/create": ElicitResultSchema,
  "roots/list": ListRootsResultSchema };
// what a fixture gets to talk back to the caller, from the SDK's request context
const ioOf = (server, extra, meta) => ({
  notify: (n) => extra.sendNotification(n),
  request: (r) => extra.sendRequest(r, RESULT_SCHEMA[r.method]),
  progressToken: meta?.progressToken,
  closeSSEStream: extra.closeSSEStream, // only over HTTP with an event store, as the SDK offers it
  clientCapabilities: server.getClientCapabilities(),
});

function newServer() {
  const server = new Server({ name: "assent-conformance-fixture", version: "1.0.0" }, { capabilities: CAPABILITIES });
  const subscriptions = new Set();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listTools() }));
  server.setRequestHandler(CallToolRequestSchema, sdkErrors(async (req, extra) => {
    if (callLog) appendFileSync(callLog, `${req.params.name} ${JSON.stringify(req.params.arguments ?? {})}\n`);
    return await callTool(req.params.name, req.params.arguments, ioOf(server, extra, req.params._meta));
  }));
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: listResources() }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, sdkErrors(async (req) => readResource(req.params.uri)));
  server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    subscriptions.add(req.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscriptions.delete(req.params.uri);
    return {};
  });
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: listPrompts() }));
  server.setRequestHandler(GetPromptRequestSchema, sdkErrors(async (req, extra) => getPrompt(req.params.name,
    req.params.arguments, ioOf(server, extra, req.params._meta))));
  server.setRequestHandler(CompleteRequestSchema, async (req) => complete(req.params.argument));
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}));
  return server;
}

// SEP-1699 resumption: every event a stream sends is kept, so a client that reconnects with
// Last-Event-ID gets what it missed.
function memoryEventStore() {
  const events = new Map(); // id -> {stream, message}
  return {
    async storeEvent(stream, message) {
      const id = `${stream}::${String(events.size).padStart(9, "0")}_${randomUUID()}`;
      events.set(id, { stream, message });
      return id;
    },
    async getStreamIdForEventId(id) {
      return events.get(id)?.stream ?? id.split("::")[0];
    },
    async replayEventsAfter(last, { send }) {
      const stream = events.get(last)?.stream ?? last.split("::")[0];
      let after = false;
      for (const [id, e] of events) {
        if (id === last) { after = true; continue; }
        if (after && e.stream === stream && e.message && Object.keys(e.message).length) await send(id, e.message);
      }
      return stream;
    },
  };
}

// A 2026-07-28 request (the per-request _meta envelope) goes to the SDK 2.4 side; the rest to
// the 1.32.2 sessions below.
async function modern(body, req, res) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(", ") : String(v));
  const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url}`, { method: req.method, headers,
    body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await modernFetch(request, body);
  if (!answer) return false;
  res.writeHead(answer.status, Object.fromEntries(answer.headers));
  if (answer.body) for await (const c of answer.body) res.write(c);
  res.end();
  return true;
}

if (process.argv.includes("--http")) {
  await serveHttp(newServer, { port: Number(process.env.FIXTURE_PORT ?? 0), dnsProtection: true,
    transport: { eventStore: memoryEventStore(), retryInterval: 500 }, beforeRequest: modern });
} else {
  // stdio: a line whose request carries the 2026-07-28 envelope goes to the SDK 2.4 side (its
  // answer's messages written back as lines); every other line to the 1.32.2 server.
  const out = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
  const legacy = { async start() {}, async send(m) { out(m); }, async close() {} };
  await newServer().connect(legacy);
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", async (line) => {
    let msg;
    try { msg = JSON.parse(line); } catch (e) { legacy.onerror?.(e); return; }
    if (msg?.method && msg.params?._meta?.["io.modelcontextprotocol/protocolVersion"] === "2026-07-28") {
      for (const m of await modernLine(msg).catch((e) => [{ jsonrpc: "2.0", id: msg.id ?? null,
        error: { code: -32603, message: String(e?.message ?? e) } }])) out(m);
      return;
    }
    legacy.onmessage?.(msg);
  });
  lines.on("close", () => { legacy.onclose?.(); process.exit(0); });
}
