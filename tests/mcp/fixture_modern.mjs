// The 2026-07-28 side of the conformance fixture (tests/mcp/upstream_fixture.mjs --http): the
// same definitions (fixture_defs.mjs) served by the official SDK 2.4 (@modelcontextprotocol/server:
// the low-level Server behind createMcpHandler, legacy "reject"), for requests that carry the
// per-request _meta envelope; 2025 requests keep going to the SDK 1.32.2 sessions. It also serves
// the 2026-07-28 multi-round-trip fixtures (test_input_required_result_* tools and the prompt
// test_input_required_result_prompt, with HMAC-protected requestState), which have no 2025 form. Routing is
// the SDK's own predicate, isLegacyRequest, as its documentation says to compose the two.
//   modernFetch(request: Request, parsedBody) -> Promise<Response | null>   (null: a legacy request)
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { appendFileSync } from "node:fs";
import { CLIENT_CAPABILITIES_META_KEY, MissingRequiredClientCapabilityError, ProtocolError, Server, createMcpHandler, hostHeaderValidationResponse,
  inputRequired, isLegacyRequest, localhostAllowedHostnames, localhostAllowedOrigins, originValidationResponse,
} from "@modelcontextprotocol/server";
import { FixtureError, MRTR_ASKS, MRTR_PROMPT, MRTR_TEXT, MRTR_TOOL_NAMES, TEMPLATE, accepted, callTool, complete,
  getPrompt, listPrompts, listResources, listTools, readResource, rootsOf, sampled } from "./fixture_defs.mjs";

const CAPABILITIES = { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true }, logging: {}, completions: {} };

// Env UPSTREAM_CALL_LOG: one line `TOOL JSON-args` per tools/call, as upstream_fixture.mjs writes.
const logCall = (p) => process.env.UPSTREAM_CALL_LOG
  && appendFileSync(process.env.UPSTREAM_CALL_LOG, `${p.name} ${JSON.stringify(p.arguments ?? {})}\n`);

const protocolErrors = (fn) => async (...a) => {
  try {
    return await fn(...a);
  } catch (e) {
    if (e instanceof FixtureError) throw new ProtocolError(e.code, e.message, e.data);
    throw e;
  }
};

// ---- multi-round-trip fixtures (SEP-2322, the input-required-result-* scenarios) ----
// requestState is HMAC-signed with a key of this process: state the client altered is refused.
const stateKey = randomBytes(32);
const mac = (body) => createHmac("sha256", stateKey).update(body).digest("base64url");
const mint = (payload) => {
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${body}.${mac(body)}`;
};
function verify(state) { // -> the payload, or throws -32602
  const [body, tag] = String(state ?? "").split(".");
  const want = body ? Buffer.from(mac(body)) : null;
  if (!want || !tag || Buffer.from(tag).length !== want.length || !timingSafeEqual(Buffer.from(tag), want))
    throw new ProtocolError(-32602, "requestState failed its integrity check", { reason: "tampered or foreign state" });
  return JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
}
const done = (t) => ({ content: [{ type: "text", text: t }] });
const want = (...keys) => Object.fromEntries(keys.map((k) => [k, MRTR_ASKS[k]]));

// name -> (responses, ctx) => result; each re-asks for what is missing or malformed.
const MRTR_TOOLS = {
  test_input_required_result_elicitation: (r) => {
    const c = accepted(r?.user_name);
    return typeof c?.name === "string" ? done(MRTR_TEXT.elicitation(c)) : inputRequired({ inputRequests: want("user_name") });
  },
  test_input_required_result_sampling: (r) => {
    const t = sampled(r?.capital_question);
    return t !== undefined ? done(MRTR_TEXT.sampling(t)) : inputRequired({ inputRequests: want("capital_question") });
  },
  test_input_required_result_list_roots: (r) => {
    const roots = rootsOf(r?.client_roots);
    return roots ? done(MRTR_TEXT.roots(roots)) : inputRequired({ inputRequests: want("client_roots") });
  },
  test_input_required_result_request_state: (r, ctx) => {
    const state = ctx.mcpReq.requestState();
    if (state !== undefined && r?.confirm) {
      const p = verify(state);
      if (p.tool === "request_state") return done(MRTR_TEXT.requestState(accepted(r.confirm)));
    }
    return inputRequired({ inputRequests: want("confirm"),
      requestState: mint({ tool: "request_state", round: 1 }) });
  },
  test_input_required_result_multiple_inputs: (r, ctx) => {
    const state = ctx.mcpReq.requestState();
    const name = accepted(r?.user_name)?.name, greeting = sampled(r?.greeting), roots = rootsOf(r?.client_roots);
    if (state !== undefined && verify(state).tool === "multiple_inputs" && name !== undefined && greeting !== undefined
      && roots)
      return done(MRTR_TEXT.multiple(name, greeting, roots));
    return inputRequired({ inputRequests: want("user_name", "greeting", "client_roots"),
      requestState: mint({ tool: "multiple_inputs", round: 1 }) });
  },
  test_input_required_result_multi_round: (r, ctx) => {
    const state = ctx.mcpReq.requestState();
    const p = state !== undefined ? verify(state) : { tool: "multi_round", round: 0 };
    if (p.tool === "multi_round" && p.round === 2 && accepted(r?.step2)?.color !== undefined)
      return done(MRTR_TEXT.multiRound(p.name, accepted(r.step2).color));
    if (p.tool === "multi_round" && p.round >= 1 && accepted(r?.step1)?.name !== undefined)
      return inputRequired({ inputRequests: want("step2"),
        requestState: mint({ tool: "multi_round", round: 2, name: accepted(r.step1).name }) });
    return inputRequired({ inputRequests: want("step1"), requestState: mint({ tool: "multi_round", round: 1 }) });
  },
  test_input_required_result_tampered_state: (r, ctx) => {
    const state = ctx.mcpReq.requestState();
    if (state !== undefined) {
      verify(state); // throws on a tampered state
      return done("state verified");
    }
    return inputRequired({ inputRequests: want("confirm"), requestState: mint({ tool: "tampered_state", round: 1 }) });
  },
  test_input_required_result_capabilities: (r, ctx) => {
    const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? {};
    const wanted = want(...[caps.elicitation && "user_name", caps.sampling && "greeting", caps.roots && "client_roots"]
      .filter(Boolean));
    const have = Object.keys(wanted).filter((k) => r?.[k] !== undefined);
    if (Object.keys(wanted).length === 0 || have.length === Object.keys(wanted).length)
      return done(`Inputs for the declared capabilities: ${Object.keys(wanted).join(", ") || "(none declared)"}`);
    return inputRequired({ inputRequests: wanted });
  },
};
// The diagnostic tools server-stateless (SEP-2575) looks for: name -> {description, inputSchema,
// run(args, ctx)}. No x-mcp-header tool (SEP-2243, http-custom-header-server-validation): the
// SDK checks Mcp-Param-* headers only for tools registered on its McpServer, not on the
// low-level Server this fixture uses for raw schemas, so such a tool would fail that scenario.
const DIAGNOSTIC_TOOLS = {
  test_missing_capability: { description: "Needs the client's sampling capability: without it, -32021",
    inputSchema: { type: "object", properties: {} },
    run: (_a, ctx) => {
      if (!ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY]?.sampling)
        throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
      return inputRequired({ inputRequests: want("greeting") });
    } },
  test_streaming_elicitation: { description: "Reports progress, then asks for input (an input_required result)",
    inputSchema: { type: "object", properties: {} },
    run: async (_a, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined)
        await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: 1, total: 2 } });
      if (accepted(ctx.mcpReq.inputResponses?.confirm)) return done("confirmed");
      return inputRequired({ inputRequests: want("confirm") });
    } },
  test_logging_tool: { description: "Logs (only when the request set a log level) and answers",
    inputSchema: { type: "object", properties: {} },
    run: async (_a, ctx) => {
      await ctx.mcpReq.log("info", "test_logging_tool ran", "conformance-fixture");
      return done("logged");
    } },
};

function newServer() {
  const server = new Server({ name: "assent-conformance-fixture", version: "1.0.0" }, { capabilities: CAPABILITIES });
  // the defaults' list has the multi-round-trip tools already (their 2025 forms: same names)
  server.setRequestHandler("tools/list", async () => ({ tools: [...listTools(),
  ...Object.entries(DIAGNOSTIC_TOOLS).map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema }))] }));
  server.setRequestHandler("tools/call", protocolErrors(async (req, ctx) => (logCall(req.params), MRTR_TOOLS[req.params.name])
    ? MRTR_TOOLS[req.params.name](ctx.mcpReq.inputResponses, ctx)
    : DIAGNOSTIC_TOOLS[req.params.name] ? DIAGNOSTIC_TOOLS[req.params.name].run(req.params.arguments ?? {}, ctx)
    : callTool(req.params.name, req.params.arguments, {
    notify: (n) => ctx.mcpReq.notify(n),
    request: () => {
      throw new Error("server-to-client requests do not exist in 2026-07-28 (input_required results replace them)");
    },
    progressToken: ctx.mcpReq._meta?.progressToken,
  })));
  server.setRequestHandler("resources/list", async () => ({ resources: listResources() }));
  server.setRequestHandler("resources/templates/list", async () => ({ resourceTemplates: [TEMPLATE] }));
  server.setRequestHandler("resources/read", protocolErrors(async (req) => readResource(req.params.uri)));
  server.setRequestHandler("prompts/list", async () => ({ prompts: listPrompts() }));
  server.setRequestHandler("prompts/get", protocolErrors(async (req, ctx) => {
    if (req.params.name !== MRTR_PROMPT.name) return getPrompt(req.params.name, req.params.arguments);
    const c = accepted(ctx.mcpReq.inputResponses?.user_context);
    if (typeof c?.context !== "string") return inputRequired({ inputRequests: want("user_context") });
    return { description: MRTR_PROMPT.description, messages: [{ role: "user",
      content: { type: "text", text: MRTR_TEXT.prompt(c.context) } }] };
  }));
  server.setRequestHandler("completion/complete", async (req) => complete(req.params.argument));
  return server;
}

const handler = createMcpHandler(() => newServer(), { legacy: "reject" });

export async function modernFetch(request, parsedBody) {
  if (await isLegacyRequest(request.clone(), parsedBody)) return null;
  const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames())
    ?? originValidationResponse(request, localhostAllowedOrigins());
  return rejected ?? handler.fetch(request, { parsedBody });
}

// Over stdio (no hosts, no origins): a request that carries the 2026-07-28 envelope, as one
// HTTP request would; every event of its answer, as JSON-RPC messages (upstream_fixture.mjs).
export async function modernLine(msg) {
  const name = msg.params?.name ?? msg.params?.uri;
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28", "mcp-method": msg.method, ...(typeof name === "string" ? { "mcp-name": name } : {}) };
  const answer = await handler.fetch(new Request("http://127.0.0.1/mcp", { method: "POST", headers,
    body: JSON.stringify(msg) }), { parsedBody: msg });
  const text = await answer.text();
  if (!(answer.headers.get("content-type") ?? "").includes("text/event-stream")) return text ? [JSON.parse(text)] : [];
  return text.split(/\r?\n\r?\n/).map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trim()).join("\n")).filter(Boolean).map((d) => JSON.parse(d));
}

// the two sides must offer the same multi-round-trip tools
for (const name of MRTR_TOOL_NAMES) if (!MRTR_TOOLS[name]) throw new Error(`fixture_modern: no 2026 form of ${name}`);
