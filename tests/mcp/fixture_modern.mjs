// The 2026-07-28 side of the conformance fixture (tests/mcp/upstream_fixture.mjs --http): the
// same definitions (fixture_defs.mjs) served by the official SDK 2.4 (@modelcontextprotocol/server:
// the low-level Server behind createMcpHandler, legacy "reject"), for requests that carry the
// per-request _meta envelope; 2025 requests keep going to the SDK 1.32.2 sessions. Routing is
// the SDK's own predicate, isLegacyRequest, as its documentation says to compose the two.
//   modernFetch(request: Request, parsedBody) -> Promise<Response | null>   (null: a legacy request)
import { Server, createMcpHandler, hostHeaderValidationResponse, isLegacyRequest, localhostAllowedHostnames,
  localhostAllowedOrigins, originValidationResponse, ProtocolError } from "@modelcontextprotocol/server";
import { FixtureError, TEMPLATE, callTool, complete, getPrompt, listPrompts, listResources, listTools,
  readResource } from "./fixture_defs.mjs";

const CAPABILITIES = { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true }, logging: {}, completions: {} };

const protocolErrors = (fn) => async (...a) => {
  try {
    return await fn(...a);
  } catch (e) {
    if (e instanceof FixtureError) throw new ProtocolError(e.code, e.message, e.data);
    throw e;
  }
};

function newServer() {
  const server = new Server({ name: "assent-conformance-fixture", version: "1.0.0" }, { capabilities: CAPABILITIES });
  server.setRequestHandler("tools/list", async () => ({ tools: listTools() }));
  server.setRequestHandler("tools/call", protocolErrors(async (req, ctx) => callTool(req.params.name, req.params.arguments, {
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
  server.setRequestHandler("prompts/get", protocolErrors(async (req) => getPrompt(req.params.name, req.params.arguments)));
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
