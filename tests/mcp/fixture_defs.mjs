// The conformance fixture's definitions (tests/mcp/upstream_fixture.mjs serves them): the
// fixture tools, resources, prompts and completions the conformance suite's server scenarios
// call, written once, with no SDK in them, so that the SDK 1.32.2 server (2025 sessions, stdio)
// and the SDK 2.4 one (2026-07-28 requests) serve the same things. A tool's run(args, io)
// gets io = {notify(notification), request(request), progressToken, closeSSEStream,
// clientCapabilities}
// from the server that runs it; lookups that fail throw FixtureError(code, message, data).
export class FixtureError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
const INVALID_PARAMS = -32602;

// a 1x1 red PNG and a minimal WAV (44-byte header, two samples)
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });
export const noArgs = { type: "object", properties: {} };

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

async function elicit(io, params, prefix) {
  try {
    const r = await io.request({ method: "elicitation/create", params });
    return text(`${prefix}: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  } catch (e) {
    return { ...text(`Elicitation not supported or error: ${e.message}`), isError: true };
  }
}

// What the multi-round-trip fixtures ask of the client (SEP-2322 names them in inputRequests;
// fixture_modern.mjs returns them as an input_required result, the 2025 forms below send them).
export const ask = (message, prop, type = "string") => ({ method: "elicitation/create", params: { message,
  requestedSchema: { type: "object", properties: { [prop]: { type } }, required: [prop] } } });
export const sample = (prompt, maxTokens = 100) => ({ method: "sampling/createMessage", params: {
  messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens } });
export const ROOTS = { method: "roots/list", params: {} };
export const MRTR_ASKS = {
  user_name: ask("What is your name?", "name"),
  capital_question: sample("What is the capital of France?"),
  client_roots: ROOTS,
  confirm: ask("Please confirm", "ok", "boolean"),
  greeting: sample("Generate a greeting", 50),
  step1: ask("Step 1: What is your name?", "name"),
  step2: ask("Step 2: What is your favorite color?", "color"),
  user_context: ask("What context should the prompt use?", "context"),
};
// the answers, whichever way they came (an inputResponses entry or a request's result)
export const accepted = (r) => (r?.action === "accept" && r.content && typeof r.content === "object" ? r.content : undefined);
export const sampled = (r) => (typeof r?.content?.text === "string" ? r.content.text : undefined);
export const rootsOf = (r) => (Array.isArray(r?.roots) ? r.roots : undefined);
export const MRTR_TEXT = {
  elicitation: (c) => `Hello, ${c.name}!`,
  sampling: (t) => `The model answered: ${t}`,
  roots: (roots) => `Client roots: ${roots.map((x) => x.uri).join(", ") || "(none)"}`,
  requestState: (c) => `state-ok: confirmed ${JSON.stringify(c ?? {})}`,
  multiple: (name, greeting, roots) => `All inputs received: name=${name}, greeting=${greeting}, roots=${roots.length}`,
  multiRound: (name, color) => `Done: ${name} likes ${color}`,
  prompt: (context) => `Use this context: ${context}`,
};
// The 2025 forms of the multi-round-trip fixtures: the same questions sent as requests to the
// client during the call (stdio and 2025 sessions have no input_required result), the same
// answers. A gate in front of this server can offer them to a 2026-07-28 client as input_required.
const pushed = (io, key) => io.request(MRTR_ASKS[key]);
const LEGACY_MRTR = {
  test_input_required_result_elicitation: async (io) => text(MRTR_TEXT.elicitation(accepted(await pushed(io, "user_name")) ?? {})),
  test_input_required_result_sampling: async (io) => text(MRTR_TEXT.sampling(sampled(await pushed(io, "capital_question")))),
  test_input_required_result_list_roots: async (io) => text(MRTR_TEXT.roots(rootsOf(await pushed(io, "client_roots")) ?? [])),
  test_input_required_result_request_state: async (io) => text(MRTR_TEXT.requestState(accepted(await pushed(io, "confirm")))),
  test_input_required_result_multiple_inputs: async (io) => {
    const name = accepted(await pushed(io, "user_name"))?.name;
    const greeting = sampled(await pushed(io, "greeting"));
    return text(MRTR_TEXT.multiple(name, greeting, rootsOf(await pushed(io, "client_roots")) ?? []));
  },
  test_input_required_result_multi_round: async (io) => {
    const name = accepted(await pushed(io, "step1"))?.name;
    return text(MRTR_TEXT.multiRound(name, accepted(await pushed(io, "step2"))?.color));
  },
  test_input_required_result_tampered_state: async (io) => {
    await pushed(io, "confirm");
    return text("state verified");
  },
  test_input_required_result_capabilities: async (io) => {
    const caps = io.clientCapabilities ?? {}, asked = [];
    if (caps.elicitation) asked.push(["user_name", await pushed(io, "user_name")]);
    if (caps.sampling) asked.push(["greeting", await pushed(io, "greeting")]);
    if (caps.roots) asked.push(["client_roots", await pushed(io, "client_roots")]);
    return text(`Inputs for the declared capabilities: ${asked.map(([k]) => k).join(", ") || "(none declared)"}`);
  },
};
export const MRTR_TOOL_NAMES = Object.keys(LEGACY_MRTR);

// name -> {description, inputSchema, run(args, io)}
export const TOOLS = {
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
    run: async (_a, io) => {
      const log = (data) => io.notify({ method: "notifications/message",
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
    run: async (_a, io) => {
      const token = io.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined)
          await io.notify({ method: "notifications/progress",
            params: { progressToken: token, progress, total: 100, message: `Completed step ${progress} of 100` } });
        if (progress < 100) await sleep(50);
      }
      return text(`Progress test completed (token ${JSON.stringify(token ?? null)})`);
    } },
  test_sampling: { description: "Tests server-initiated sampling (LLM completion request)",
    inputSchema: { type: "object", properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"] },
    run: async ({ prompt }, io) => {
      try {
        const r = await io.request({ method: "sampling/createMessage", params: {
          messages: [{ role: "user", content: { type: "text", text: String(prompt ?? "") } }], maxTokens: 100 } });
        return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
      } catch (e) {
        return { ...text(`Sampling not supported or error: ${e.message}`), isError: true };
      }
    } },
  test_elicitation: { description: "Tests server-initiated elicitation (user input request)",
    inputSchema: { type: "object", properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"] },
    run: ({ message }, io) => elicit(io, { mode: "form", message: String(message ?? ""), requestedSchema: {
      type: "object", properties: { username: { type: "string", description: "User's response" },
        email: { type: "string", description: "User's email address" } }, required: ["username", "email"] } },
    "User response") },
  test_elicitation_sep1034_defaults: { description: "Tests elicitation with default values per SEP-1034",
    run: (_a, io) => elicit(io, { mode: "form", message: "Please review and update the form fields with defaults",
      requestedSchema: { type: "object", properties: {
        name: { type: "string", description: "User name", default: "John Doe" },
        age: { type: "integer", description: "User age", default: 30 },
        score: { type: "number", description: "User score", default: 95.5 },
        status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
        verified: { type: "boolean", description: "Verification status", default: true } }, required: [] } },
    "Elicitation completed") },
  test_elicitation_sep1330_enums: { description: "Tests elicitation with enum schema improvements per SEP-1330",
    run: (_a, io) => elicit(io, { mode: "form", message: "Please select options from the enum fields",
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
    run: async (_a, io) => {
      io.closeSSEStream?.(); // only over HTTP with an event store, as the SDK offers it
      await sleep(100);
      return text("Reconnection test completed successfully. If you received this, the client properly reconnected "
        + "after stream closure.");
    } },
};

for (const [name, run] of Object.entries(LEGACY_MRTR))
  TOOLS[name] = { description: `Multi-round-trip fixture ${name} (SEP-2322; over 2025: requests to the client)`,
    run: (_a, io) => run(io) };

export const RESOURCES = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource for testing",
    mimeType: "text/plain", text: "This is the content of the static text resource." },
  { uri: "test://static-binary", name: "static-binary", description: "A static binary resource (a PNG) for testing",
    mimeType: "image/png", blob: PNG },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to",
    mimeType: "text/plain", text: "Watched resource content" },
];
export const TEMPLATE = { uriTemplate: "test://template/{id}/data", name: "template", title: "A templated resource",
  description: "A resource template: {id} is substituted", mimeType: "application/json" };
const TEMPLATE_RE = /^test:\/\/template\/([^/]+)\/data$/;

export const PROMPTS = {
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
export const COMPLETIONS = { arg1: ["paris", "park", "party", "test", "testing"], arg2: ["world", "word", "work"],
  resourceUri: ["test://static-text", "test://static-binary"], id: ["123", "456", "789"] };


export function readResource(uri) {
  const r = RESOURCES.find((x) => x.uri === uri);
  if (r) return { contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } : { uri, mimeType: r.mimeType, text: r.text }] };
  const m = TEMPLATE_RE.exec(uri);
  if (m) {
    const id = decodeURIComponent(m[1]);
    return { contents: [{ uri, mimeType: "application/json",
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
  }
  throw new FixtureError(INVALID_PARAMS, "Resource not found", { uri });
}

export const listResources = () => RESOURCES.map(({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType }));
export const listPrompts = () => [...Object.entries(PROMPTS).map(([name, p]) => ({ name, description: p.description,
  arguments: p.arguments })), MRTR_PROMPT];
export const listTools = () => Object.entries(TOOLS).map(([name, t]) => ({ name, description: t.description,
  inputSchema: t.inputSchema ?? noArgs }));

export const MRTR_PROMPT = { name: "test_input_required_result_prompt",
  description: "A prompt that needs elicited input first", arguments: [] };

// prompts/get; io (as for a tool) serves the 2025 form of the multi-round-trip prompt.
export async function getPrompt(name, args = {}, io = undefined) {
  if (name === MRTR_PROMPT.name && io) {
    const c = accepted(await pushed(io, "user_context"));
    return { description: MRTR_PROMPT.description, messages: [{ role: "user",
      content: { type: "text", text: MRTR_TEXT.prompt(c?.context) } }] };
  }
  const p = PROMPTS[name];
  if (!p) throw new FixtureError(INVALID_PARAMS, `Unknown prompt: ${name}`);
  const missing = p.arguments.filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
  if (missing.length) throw new FixtureError(INVALID_PARAMS, `Missing required arguments: ${missing.join(", ")}`);
  return { description: p.description, messages: p.get(args) };
}

export function complete(argument) {
  const values = (COMPLETIONS[argument?.name] ?? []).filter((v) => v.startsWith(argument?.value ?? ""));
  return { completion: { values, total: values.length, hasMore: false } };
}

export function callTool(name, args, io) {
  const t = TOOLS[name];
  if (!t) throw new FixtureError(INVALID_PARAMS, `Unknown tool: ${name}`);
  return t.run(args ?? {}, io);
}
