// The reference server of the HTTP gateway benchmark (tests/bench/gateway_http_bench.py): the
// official TypeScript SDK (tests/mcp/node_modules, @modelcontextprotocol/sdk 1.32.2) serving MCP
// over Streamable HTTP with stateful sessions on node's http module: one McpServer and one
// StreamableHTTPServerTransport per session (the SDK's own pattern), DNS-rebinding protection on
// (assent checks Host and Origin too), SSE answers (the SDK's default, enableJsonResponse false).
//
// It offers `request_feedback` with the input shape of ref_server.mjs and holds each request
// pending (one queue for all sessions) until it is decided or times out. A reviewer decides from
// outside, as `assent approve` does for assent over its control socket:
//   GET  /pending                      {"requests":[{"session_id","type","message","deadline"}]}
//   POST /decide {"session_id": ID}    or {"session_ids": [ID, ...]}: approve each; answers
//                                      {"ok":true,"decided":N} once every decision is on disk
// An approval is signed and recorded before the agent hears of it: an ES256 JWS (the claims
// assent's token has, roughly) and one JSON line appended to the decision log and fsynced per
// decision (concurrent decisions each await their own fsync; the kernel may merge them). NOTES.md
// describes the reference as signing with jose; jose is not installed in tests/mcp, so the JWS is
// made by hand with node:crypto's sign() over an EC P-256 key (ieee-p1363 signature encoding, as
// JWS wants): the same algorithm and the same work, without the dependency.
// No authentication (assent checks a bearer key per request; the reference does not).
//
// Usage: node tests/bench/ref_http_server.mjs PORT [DECISION_LOG]
//   PORT 0 takes any free port; the bound port is printed on stdout as one line.
//   DECISION_LOG defaults to ./ref-decisions.jsonl.  FEEDBACK_TIMEOUT_SECONDS (default 300).
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from "node:crypto";
import { open } from "node:fs/promises";
import { createServer } from "node:http";
import { McpServer } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js";
import { StreamableHTTPServerTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js";
import { isInitializeRequest } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";
import { TIMEOUT_MAX, inputSchema } from "./ref_tool.mjs";

const defaultTimeout = Number(process.env.FEEDBACK_TIMEOUT_SECONDS || 300);
const port = Number(process.argv[2] ?? 0);
const logPath = process.argv[3] ?? "ref-decisions.jsonl";
const BODY_MAX = 4 << 20;

// ---- signing: ES256 JWS by hand ----
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const jwk = publicKey.export({ format: "jwk" });
const b64u = (b) => Buffer.from(b).toString("base64url");
const kid = b64u(createHash("sha256").update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })).digest());
const header = b64u(JSON.stringify({ alg: "ES256", typ: "JWT", kid }));
function es256(claims) {
  const input = `${header}.${b64u(JSON.stringify(claims))}`;
  const sig = sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
  return `${input}.${b64u(sig)}`;
}

const log = await open(logPath, "a", 0o600);
async function record(entry) {
  await log.appendFile(JSON.stringify(entry) + "\n");
  await log.sync();
}

// ---- the queue, shared by every session ----
const pending = new Map(); // session_id -> { args, deadline, timer, resolve, session }

const answer = (o) => ({ content: [{ type: "text", text: JSON.stringify(o) }], structuredContent: o });

function newServer(owner) {
  const server = new McpServer({ name: "assent-bench-reference", version: "0.0.1" });
  server.registerTool("request_feedback", {
    title: "Ask a human before acting",
    description: "Pause and ask a human reviewer before a consequential action. Proceed only if approved is true.",
    inputSchema,
  }, async (args, extra) => {
    const session_id = "req-" + randomBytes(16).toString("hex");
    const seconds = args.timeout_override ?? defaultTimeout;
    const deadline = Math.floor(Date.now() / 1000) + seconds;
    const done = new Promise((resolve) => {
      const timer = setTimeout(() => {
        pending.delete(session_id);
        resolve({ session_id, status: "timeout", approved: false,
                  timestamp: Math.floor(Date.now() / 1000), error: "timeout" });
      }, seconds * 1000);
      pending.set(session_id, { args, deadline, timer, resolve, owner });
    });
    // a blocking call whose client cancels it leaves the queue (assent does the same)
    extra?.signal?.addEventListener("abort", () => {
      const p = pending.get(session_id);
      if (p) {
        clearTimeout(p.timer);
        pending.delete(session_id);
        p.resolve({ session_id, status: "cancelled", approved: false });
      }
    });
    if (args.wait === false)
      return answer({ session_id, status: "pending", approved: false, deadline });
    return answer(await done);
  });
  return server;
}

async function approve(session_id) {
  const p = pending.get(session_id);
  if (!p)
    return false;
  pending.delete(session_id);
  clearTimeout(p.timer);
  const now = Math.floor(Date.now() / 1000);
  const action = "sha256:" + createHash("sha256").update(JSON.stringify(p.args)).digest("hex");
  const jti = randomUUID();
  const token = es256({ token_type: "assent/approval/v1", iss: "assent-bench-reference", aud: p.args.audience ?? "default",
    sub: session_id, session_id, jti, iat: now, nbf: now, exp: now + 900, approved: true,
    reviewer: { name: "bench", channel: "http" }, decision: "approved", action, assurance: "reviewer" });
  await record({ kind: "decision", time: Date.now(), session_id, outcome: "approved", requester: p.owner,
                 jti, kid, action, token });
  p.resolve({ session_id, status: "approved", approved: true, timestamp: now, approval_token: token });
  return true;
}

// ---- HTTP ----
const transports = new Map(); // Mcp-Session-Id -> transport

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let n = 0;
    req.on("data", (c) => {
      n += c.length;
      if (n > BODY_MAX) {
        reject(new Error("body too large"));
        req.destroy();
      } else {
        parts.push(c);
      }
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function json(res, status, obj) {
  const s = JSON.stringify(obj);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(s) });
  res.end(s);
}

let allowedHosts = [];

async function onMcp(req, res) {
  const sid = req.headers["mcp-session-id"];
  let body;
  if (req.method === "POST") {
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return json(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    }
  }
  let t = sid ? transports.get(sid) : undefined;
  if (sid && !t)
    return json(res, 404, { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } });
  if (!t) {
    if (req.method !== "POST" || !isInitializeRequest(body))
      return json(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: no valid session ID" } });
    t = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, t),
      enableDnsRebindingProtection: true,
      allowedHosts,
    });
    t.onclose = () => { if (t.sessionId) transports.delete(t.sessionId); };
    await newServer(req.socket.remoteAddress ?? "?").connect(t);
  }
  await t.handleRequest(req, res, body);
}

const http = createServer(async (req, res) => {
  try {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/mcp")
      return await onMcp(req, res);
    if (path === "/pending" && req.method === "GET") {
      const requests = [];
      for (const [session_id, p] of pending)
        requests.push({ session_id, type: p.args.type, message: p.args.message.slice(0, 512), deadline: p.deadline });
      return json(res, 200, { requests });
    }
    if (path === "/decide" && req.method === "POST") {
      const b = JSON.parse(await readBody(req));
      const ids = Array.isArray(b.session_ids) ? b.session_ids : [b.session_id];
      const got = await Promise.all(ids.map((id) => (typeof id === "string" ? approve(id) : false)));
      const decided = got.filter(Boolean).length;
      return json(res, decided === ids.length ? 200 : 404, { ok: decided === ids.length, decided });
    }
    if (path === "/health")
      return json(res, 200, { status: "ok", pending_sessions: pending.size, mcp_sessions: transports.size });
    json(res, 404, { error: "not found" });
  } catch (e) {
    if (!res.headersSent)
      json(res, 500, { error: String(e) });
    else
      res.end();
  }
});
http.requestTimeout = 0; // a held request may wait longer than node's default of 300 s
http.headersTimeout = 60000;
http.keepAliveTimeout = 30000; // assent's ASSENT_HTTP_IDLE_SECONDS default
http.listen(port, "127.0.0.1", () => {
  const p = http.address().port;
  allowedHosts = [`127.0.0.1:${p}`, `localhost:${p}`];
  process.stdout.write(`${p}\n`);
});
const stop = () => { http.close(); process.exit(0); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
