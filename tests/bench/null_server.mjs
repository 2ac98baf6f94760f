// The "client floor" of tests/bench/gate_bench.py: an MCP server with nothing behind it, in raw
// JSON-RPC (no SDK), answering initialize and every tools/call with the text it was given, over
// stdio or, with --http, over HTTP on 127.0.0.1 (a free port printed as `PORT n`; JSON answers,
// one session id). What gate_client.mjs measures against it is the driver's own cost per call.
import { createServer } from "node:http";

const answer = (m) => {
  if (m.id === undefined) return null;
  if (m.method === "initialize")
    return { jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params?.protocolVersion ?? "2025-11-25",
      capabilities: { tools: {} }, serverInfo: { name: "null", version: "1" } } };
  if (m.method === "tools/call")
    return { jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: m.params?.arguments?.text ?? "" }] } };
  return { jsonrpc: "2.0", id: m.id, result: {} };
};

if (process.argv.includes("--http")) {
  const http = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => { body += c; });
    req.on("end", () => {
      let a = null;
      try { a = answer(JSON.parse(body)); } catch { /* answered 400 below */ }
      if (!a) {
        res.writeHead(body ? 202 : 400).end();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json", "Mcp-Session-Id": "null-session" });
      res.end(JSON.stringify(a));
    });
  });
  http.keepAliveTimeout = 60000;
  http.listen(0, "127.0.0.1", () => process.stdout.write(`PORT ${http.address().port}\n`));
} else {
  let buf = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (c) => {
    buf += c;
    let i, out = "";
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const a = answer(JSON.parse(line));
        if (a) out += JSON.stringify(a) + "\n";
      } catch { /* not JSON: nothing to answer */ }
    }
    if (out) process.stdout.write(out);
  });
  process.stdin.on("end", () => process.exit(0));
}
