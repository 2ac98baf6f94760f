// The SDK 2.x reference server of tests/bench/mcp2026_bench.py: @modelcontextprotocol/server
// 2.4 (tests/mcp pins it) serving one tool, request_feedback with the input shape of
// ref_tool.mjs (the same as assentd's), answered at once: the bench measures connecting and
// tools/list, not decisions. createMcpHandler is the SDK's own serving entry: 2026-07-28
// requests on its modern path (a fresh McpServer per request, the per-request _meta
// envelope), 2025 requests on its default stateless legacy fallback (initialize answered, no
// session kept). It is web-standard (fetch-shaped); node:http is bridged to it here by hand,
// as @modelcontextprotocol/node's toNodeHandler does (that adapter is not installed).
// Usage: node tests/bench/ref2_server.mjs PORT   (0: any free port; the port is printed on stdout)
import { createServer } from "node:http";
import { McpServer, createMcpHandler } from "../mcp/node_modules/@modelcontextprotocol/server/dist/index.mjs";
import * as z from "../mcp/node_modules/zod/index.js";
import { description, inputSchema, title } from "./ref_tool.mjs";

const port = Number(process.argv[2] ?? 0);
const BODY_MAX = 4 << 20;

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: "ref2", version: "2.4.0" });
  server.registerTool("request_feedback", { title, description, inputSchema: z.object(inputSchema) },
    async () => ({ content: [{ type: "text", text: "{\"status\":\"pending\"}" }] }));
  return server;
});

const http = createServer(async (req, res) => {
  try {
    const chunks = [];
    let size = 0;
    for await (const c of req) {
      size += c.length;
      if (size > BODY_MAX) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(c);
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(", ") : String(v));
    const body = ["GET", "HEAD"].includes(req.method) ? undefined : Buffer.concat(chunks);
    const answer = await handler.fetch(new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url}`,
      { method: req.method, headers, body }));
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (answer.body) for await (const c of answer.body) res.write(c);
    res.end();
  } catch (e) {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e?.message ?? e));
  }
});
http.keepAliveTimeout = 60000;
http.listen(port, "127.0.0.1", () => console.log(http.address().port));
