// Streamable HTTP serving shared by the test upstreams (upstream_fs.mjs, upstream_fixture.mjs)
// and the reference proxy (tests/bench/ref_proxy.mjs): the official SDK 1.32.2's own pattern,
// one McpServer and one StreamableHTTPServerTransport per MCP session (stateful: Mcp-Session-Id),
// on node:http, bound to 127.0.0.1 on the port asked for (0: any free one). Once listening it
// prints `PORT n` on stdout (one line), which is how tests and benches find it.
//
//   serveHttp(newServer, opts) -> Promise<http.Server>
//     newServer(): a fresh, unconnected McpServer for a new session
//     opts.path        the endpoint (default "/mcp")
//     opts.port        the port (default 0)
//     opts.transport   extra StreamableHTTPServerTransport options (eventStore, retryInterval...)
//     opts.dnsProtection  true: allow only Host 127.0.0.1:PORT / localhost:PORT and Origins of them
//     opts.onTransport(transport, server)  after connect: hook into transport.onmessage etc.
//     opts.beforeRequest(body, req, res)   may answer itself (return true) or delay (await)
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const BODY_MAX = 16 << 20;

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
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });
}

export async function serveHttp(newServer, opts = {}) {
  const path = opts.path ?? "/mcp";
  const sessions = new Map(); // Mcp-Session-Id -> transport
  let port = 0;
  const jsonError = (res, status, message) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
  };
  const http = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://127.0.0.1");
      if (url.pathname !== path) {
        res.writeHead(404).end();
        return;
      }
      let body;
      if (req.method === "POST") {
        const raw = await readBody(req);
        try {
          body = JSON.parse(raw.toString("utf8"));
        } catch {
          jsonError(res, 400, "Parse error");
          return;
        }
      }
      if (opts.beforeRequest && (await opts.beforeRequest(body, req, res))) return;
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? sessions.get(sid) : undefined;
      if (sid && !transport) {
        jsonError(res, 404, "Session not found");
        return;
      }
      if (!transport) {
        const init = Array.isArray(body) ? body.some(isInitializeRequest) : body && isInitializeRequest(body);
        if (req.method !== "POST" || !init) {
          jsonError(res, 400, "Bad Request: No valid session ID provided");
          return;
        }
        const hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
          ...(opts.dnsProtection
            ? { enableDnsRebindingProtection: true, allowedHosts: hosts, allowedOrigins: hosts.map((h) => `http://${h}`) }
            : {}),
          ...(opts.transport ?? {}),
        });
        const server = newServer();
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
          server.close().catch(() => {});
        };
        await server.connect(transport);
        if (opts.onTransport) opts.onTransport(transport, server);
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) jsonError(res, 500, String(e?.message ?? e));
      else res.end();
    }
  });
  http.keepAliveTimeout = 60000;
  await new Promise((resolve) => http.listen(opts.port ?? 0, "127.0.0.1", resolve));
  port = http.address().port;
  process.stdout.write(`PORT ${port}\n`);
  return http;
}
