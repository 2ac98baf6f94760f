#!/usr/bin/python3
"""A url upstream whose tools end their call's SSE answer before the result (SEP-1699), for
tests/integration/upstream_resume.sh: Streamable HTTP on 127.0.0.1 port 0 (printed as
`PORT n`), HTTP/1.1, one session. Each tools/call is answered as SSE: a priming event
(id, retry: 50, empty data), then the stream ends. A GET with Last-Event-ID then does what
the tool says:
  once     the result (text "resumed once") on the first resume
  never    ends again with a new id, every time (assent gives up after its bounded resumes)
  refuse   405
Every GET's Last-Event-ID is appended to the file given as the first argument."""
import http.server
import json
import socketserver
import sys

log_path = sys.argv[1]
calls = {}  # event id prefix -> (tool, JSON-RPC id, resumes so far)
TOOLS = [{"name": n, "description": "ends its SSE answer early: " + n, "inputSchema": {"type": "object"}}
         for n in ("once", "never", "refuse")]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", ctype="application/json", extra=()):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", "sess-1")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def sse(self, text):
        self.send(200, text.encode(), "text/event-stream", [("Cache-Control", "no-cache")])

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        m, rid = msg.get("method"), msg.get("id")
        if rid is None or m is None:
            return self.send(202)
        if m == "initialize":
            res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "resume-upstream", "version": "1"}}
        elif m == "tools/list":
            res = {"tools": TOOLS}
        elif m == "tools/call":
            key = "c%d" % (len(calls) + 1)
            calls[key] = [msg["params"]["name"], rid, 0]
            return self.sse("id: %s-0\nretry: 50\ndata: \n\n" % key)
        else:
            return self.send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32601, "message": "no " + m}}).encode())
        self.send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode())

    def do_GET(self):
        last = self.headers.get("Last-Event-ID") or ""
        with open(log_path, "a") as f:
            f.write(last + "\n")
        key = last.split("-")[0]
        if key not in calls:
            return self.send(400)
        tool, rid, n = calls[key]
        calls[key][2] = n + 1
        if tool == "refuse":
            return self.send(405, extra=[("Allow", "POST")])
        if tool == "once":
            res = {"content": [{"type": "text", "text": "resumed once"}]}
            return self.sse("id: %s-%d\nevent: message\ndata: %s\n\n" % (key, n + 1, json.dumps(
                {"jsonrpc": "2.0", "id": rid, "result": res})))
        self.sse("id: %s-%d\ndata: \n\n" % (key, n + 1))  # never: another id, no result

    def do_DELETE(self):
        self.send(200)


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = S(("127.0.0.1", 0), H)
print("PORT %d" % srv.server_address[1], flush=True)
srv.serve_forever()
