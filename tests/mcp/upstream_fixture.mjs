// The conformance fixture upstream (issue 15): an MCP server on the official SDK
// (@modelcontextprotocol/sdk 1.32.2, the low-level Server, so that raw JSON Schemas go out as
// written) exposing the fixture tools, resources and prompts that the conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12) calls in its server scenarios, each doing
// what that scenario's "Server Implementation Requirements" (in the suite's dist/index.js) ask.
// tests/integration/conformance_fixture.sh runs the suite against it directly, and through
// assentd with this server as a stdio upstream (`"prefix": ""`: the tools keep their names).
//
// Usage: node tests/mcp/upstream_fixture.mjs [--http]
//   stdio by default; --http: Streamable HTTP on 127.0.0.1 (stateful sessions, Host/Origin
//   checked against 127.0.0.1:PORT and localhost:PORT, an in-memory event store so that a
//   closed SSE stream can be resumed), a free port printed as `PORT n` (env FIXTURE_PORT chooses).
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
// Not served: the 2026-07-28 fixtures (test_input_required_result_*, the tasks extension's
// slow_compute, greet...): SDK 1.32.2 speaks up to 2025-11-25 (see conformance_fixture.sh).
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema, CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema, ErrorCode,
  GetPromptRequestSchema, ListPromptsRequestSchema, ListResourceTemplatesRequestSchema, ListResourcesRequestSchema,
  ListToolsRequestSchema, McpError, ReadResourceRequestSchema, SetLevelRequestSchema, SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { serveHttp } from "./mcp_http.mjs";

// a 1x1 red PNG and a minimal WAV (44-byte header, two samples)
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });
const noArgs = { type: "object", properties: {} };
const callLog = process.env.UPSTREAM_CALL_LOG;

const SCHEMA_2020_12 = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: { address: { $anchor: "addressDef", type: "object",
    properties: { street: { type: "string" }, city: { type: "string" } } } },
  properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" },
    contactMethod: { type: "string", enum: ["phone", "email"] }, phone: { type: "string" }, email: { type: "string" } },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false,
};

async function elicit(extra, params, prefix) {
  try {
    const r = await extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema);
    return text(`${prefix}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  } catch (e) {
    return { ...text(`Elicitation not supported or error: ${e.message}`), isError: true };
  }
}

// name -> {description, inputSchema, run(args, extra, req)}
const TOOLS = {
  test_simple_text: { description: "Tests simple text content response",
    run: () => text("This is a simple text response for testing.") },
  test_image_content: { description: "Tests image content response",
    run: () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }) },
  test_audio_content: { description: "Tests audio content response",
    run: () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }) },
  test_embedded_resource: { description: "Tests embedded resource content response",
    run: () => ({ content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain",
      text: "This is an embedded resource content." } }] }) },
  test_multiple_content_types: { description: "Tests response with multiple content types (text, image, resource)",
    run: () => ({ content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json",
        text: JSON.stringify({ test: "data", value: 123 }) } }] }) },
  test_tool_with_logging: { description: "Tests tool that emits log messages during execution",
    run: async (_a, extra) => {
      const log = (data) => extra.sendNotification({ method: "notifications/message",
        params: { level: "info", logger: "conformance-fixture", data } });
      await log("Tool execution started");
      await sleep(50);
      await log("Tool processing data");
      await sleep(50);
      await log("Tool execution completed");
      return text("Tool with logging executed successfully");
    } },
  test_error_handling: { description: "Tests error response handling",
    run: () => ({ ...text("This tool intentionally returns an error for testing"), isError: true }) },
  test_tool_with_progress: { description: "Tests tool that reports progress notifications",
    run: async (_a, extra, req) => {
      const token = req.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined)
          await extra.sendNotification({ method: "notifications/progress",
            params: { progressToken: token, progress, total: 100, message: `Completed step ${progress} of 100` } });
        if (progress < 100) await sleep(50);
      }
      return text(`Progress test completed (token ${JSON.stringify(token ?? null)})`);
    } },
  test_sampling: { description: "Tests server-initiated sampling (LLM completion request)",
    inputSchema: { type: "object", properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"] },
    run: async ({ prompt }, extra) => {
      try {
        const r = await extra.sendRequest({ method: "sampling/createMessage", params: {
          messages: [{ role: "user", content: { type: "text", text: String(prompt ?? "") } }], maxTokens: 100 } },
        CreateMessageResultSchema);
        return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
      } catch (e) {
        return { ...text(`Sampling not supported or error: ${e.message}`), isError: true };
      }
    } },
  test_elicitation: { description: "Tests server-initiated elicitation (user input request)",
    inputSchema: { type: "object", properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"] },
    run: ({ message }, extra) => elicit(extra, { mode: "form", message: String(message ?? ""), requestedSchema: {
      type: "object", properties: { username: { type: "string", description: "User's response" },
        email: { type: "string", description: "User's email address" } }, required: ["username", "email"] } },
    "User response") },
  test_elicitation_sep1034_defaults: { description: "Tests elicitation with default values per SEP-1034",
    run: (_a, extra) => elicit(extra, { mode: "form", message: "Please review and update the form fields with defaults",
      requestedSchema: { type: "object", properties: {
        name: { type: "string", description: "User name", default: "John Doe" },
        age: { type: "integer", description: "User age", default: 30 },
        score: { type: "number", description: "User score", default: 95.5 },
        status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
        verified: { type: "boolean", description: "Verification status", default: true } }, required: [] } },
    "Elicitation completed") },
  test_elicitation_sep1330_enums: { description: "Tests elicitation with enum schema improvements per SEP-1330",
    run: (_a, extra) => elicit(extra, { mode: "form", message: "Please select options from the enum fields",
      requestedSchema: { type: "object", properties: {
        untitledSingle: { type: "string", description: "Select one option", enum: ["option1", "option2", "option3"] },
        titledSingle: { type: "string", description: "Select one option with titles", oneOf: [
          { const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" },
          { const: "value3", title: "Third Option" }] },
        legacyEnum: { type: "string", description: "Select one option (legacy)", enum: ["opt1", "opt2", "opt3"],
          enumNames: ["Option One", "Option Two", "Option Three"] },
        untitledMulti: { type: "array", description: "Select multiple options",
          items: { type: "string", enum: ["option1", "option2", "option3"] } },
        titledMulti: { type: "array", description: "Select multiple options with titles", items: { anyOf: [
          { const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" },
          { const: "value3", title: "Third Choice" }] } } }, required: [] } },
    "Elicitation completed") },
  json_schema_2020_12_tool: { description: "Tool with JSON Schema 2020-12 features", inputSchema: SCHEMA_2020_12,
    run: (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`) },
  test_reconnection: { description: "Tests SSE stream disconnection and client reconnection (SEP-1699): the server "
      + "closes the stream mid-call and sends the result after the client reconnects.",
    run: async (_a, extra) => {
      extra.closeSSEStream?.(); // only over HTTP with an event store, as the SDK offers it
      await sleep(100);
      return text("Reconnection test completed successfully. If you received this, the client properly reconnected "
        + "after stream closure.");
    } },
};

const RESOURCES = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource for testing",
    mimeType: "text/plain", text: "This is the content of the static text resource." },
  { uri: "test://static-binary", name: "static-binary", description: "A static binary resource (a PNG) for testing",
    mimeType: "image/png", blob: PNG },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to",
    mimeType: "text/plain", text: "Watched resource content" },
];
const TEMPLATE = { uriTemplate: "test://template/{id}/data", name: "template", title: "A templated resource",
  description: "A resource template: {id} is substituted", mimeType: "application/json" };
const TEMPLATE_RE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = {
  test_simple_prompt: { description: "A simple prompt without arguments", arguments: [],
    get: () => [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] },
  test_prompt_with_arguments: { description: "A prompt with required arguments", arguments: [
    { name: "arg1", description: "First test argument", required: true },
    { name: "arg2", description: "Second test argument", required: true }],
  get: (a) => [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }] },
  test_prompt_with_embedded_resource: { description: "A prompt that embeds a resource", arguments: [
    { name: "resourceUri", description: "URI of the resource to embed", required: true }],
  get: (a) => [
    { role: "user", content: { type: "resource", resource: { uri: a.resourceUri, mimeType: "text/plain",
      text: "Embedded resource content for testing." } } },
    { role: "user", content: { type: "text", text: "Please process the embedded resource above." } }] },
  test_prompt_with_image: { description: "A prompt with image content", arguments: [],
    get: () => [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } }] },
};
const COMPLETIONS = { arg1: ["paris", "park", "party", "test", "testing"], arg2: ["world", "word", "work"],
  resourceUri: ["test://static-text", "test://static-binary"], id: ["123", "456", "789"] };

function newServer() {
  const server = new Server({ name: "assent-conformance-fixture", version: "1.0.0" }, { capabilities: {
    tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true },
    logging: {}, completions: {} } });
  const subscriptions = new Set();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: Object.entries(TOOLS).map(([name, t]) => ({
    name, description: t.description, inputSchema: t.inputSchema ?? noArgs })) }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const t = TOOLS[req.params.name];
    if (callLog) appendFileSync(callLog, `${req.params.name} ${JSON.stringify(req.params.arguments ?? {})}\n`);
    if (!t) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    return await t.run(req.params.arguments ?? {}, extra, req);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES.map(
    ({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType })) }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    const r = RESOURCES.find((x) => x.uri === uri);
    if (r) return { contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } : { uri, mimeType: r.mimeType, text: r.text }] };
    const m = TEMPLATE_RE.exec(uri);
    if (m) {
      const id = decodeURIComponent(m[1]);
      return { contents: [{ uri, mimeType: "application/json",
        text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
    }
    throw new McpError(ErrorCode.InvalidParams, "Resource not found", { uri });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    subscriptions.add(req.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscriptions.delete(req.params.uri);
    return {};
  });
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: Object.entries(PROMPTS).map(
    ([name, p]) => ({ name, description: p.description, arguments: p.arguments })) }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const p = PROMPTS[req.params.name];
    if (!p) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${req.params.name}`);
    const args = req.params.arguments ?? {};
    const missing = p.arguments.filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
    if (missing.length) throw new McpError(ErrorCode.InvalidParams, `Missing required arguments: ${missing.join(", ")}`);
    return { description: p.description, messages: p.get(args) };
  });
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const { name, value } = req.params.argument;
    const values = (COMPLETIONS[name] ?? []).filter((v) => v.startsWith(value ?? ""));
    return { completion: { values, total: values.length, hasMore: false } };
  });
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

if (process.argv.includes("--http")) {
  await serveHttp(newServer, { port: Number(process.env.FIXTURE_PORT ?? 0), dnsProtection: true,
    transport: { eventStore: memoryEventStore(), retryInterval: 500 } });
} else {
  await newServer().connect(new StdioServerTransport());
}
