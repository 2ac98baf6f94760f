#!/usr/bin/python3
"""A small MCP-ish Streamable HTTP server for tests/integration/uhttp_tls.sh (python3
http.server + ssl): HTTP/1.1 keep-alive, HTTPS with the given certificate or plain HTTP,
on 127.0.0.1 port 0 (the port is printed on the first line of stdout). POST /mcp with a
JSON-RPC body; what it answers depends on the method:
  initialize     JSON result with a new Mcp-Session-Id (sess-N)
  notifications/* 202 Accepted, no body
  sse            text/event-stream, chunked: a priming event, a comment, a progress
                 notification, the result; events split across writes, CRLF and LF lines
  flood          an SSE stream of events without end (a hostile server)
  batch          a JSON array of two messages
  big            a JSON body of --big bytes
  close          the result with Connection: close, then the connection is closed
  forget         the result; the session is forgotten (later requests with it: 404)
  anything else  JSON result {"echo": method, "session": the header's session}
GET /mcp with a known session streams two server-initiated messages (SSE) and ends.
A request with a session id the server does not know gets 404. With --auth VALUE every
request must carry Authorization: VALUE (else 401). --tls13 accepts TLS 1.3 only. Each
request's TLS version and whether its session was resumed go to --log."""
import argparse
import http.server
import json
import socketserver
import ssl
import sys
import threading

ap = argparse.ArgumentParser()
ap.add_argument("--cert")
ap.add_argument("--key")
ap.add_argument("--plain", action="store_true")
ap.add_argument("--tls13", action="store_true")
ap.add_argument("--auth")
ap.add_argument("--big", type=int, default=5 << 20)
ap.add_argument("--log")
args = ap.parse_args()

sessions = set()
counter = [0]
lock = threading.Lock()


def log(line):
    if args.log:
        with lock, open(args.log, "a") as f:
            f.write(line + "\n")


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # one write per answer (flushed after each), so Nagle holds nothing back

    def log_message(self, fmt, *a):
        pass

    def reply(self, status, body=b"", ctype="application/json", extra=()):
        self.send_response(status)
        if body or status == 200:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if isinstance(self.connection, ssl.SSLSocket):
            log("tls %s reused %s" % (self.connection.version(), self.connection.session_reused))
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n))
        if args.auth is not None and self.headers.get("Authorization") != args.auth:
            return self.reply(401, b'{"error":"unauthorized"}')
        log("auth ok" if args.auth else "no auth")
        method, rid = req.get("method", ""), req.get("id")
        sid = self.headers.get("Mcp-Session-Id")
        log("request %s session %s protocol %s" % (method, sid, self.headers.get("MCP-Protocol-Version")))
        if sid is not None and sid not in sessions:
            return self.reply(404, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"no session"}}')
        if method.startswith("notifications/"):
            return self.reply(202)

        def result(r):
            return json.dumps({"jsonrpc": "2.0", "id": rid, "result": r}, separators=(",", ":")).encode()

        if method == "initialize":
            with lock:
                counter[0] += 1
                new = "sess-%d" % counter[0]
                sessions.add(new)
            return self.reply(200, result({"protocolVersion": "2025-06-18"}), extra=[("Mcp-Session-Id", new)])
        if method == "sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            prog = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
            stream = ("id: e0\r\ndata:\r\n\r\n: keep-alive\n"
                      "id: e1\ndata: " + prog + "\n\n"
                      "event: message\r\nid: e2\r\ndata: " + result({"sse": True}).decode() + "\r\n\r\n").encode()
            # Written in pieces that cut lines and events anywhere.
            for i in range(0, len(stream), 7):
                piece = stream[i:i + 7]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        if method == "flood":  # SSE events without end, until the client goes
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            ev = b"data: " + result({"flood": "y" * 200}) + b"\n\n"
            try:
                for _ in range(1 << 20):
                    self.wfile.write(ev * 20)
                    self.wfile.flush()
            except OSError:
                log("flood: the client went")
            self.close_connection = True
            return
        if method == "batch":
            body = b"[" + result({"n": 1}) + b",\n" + json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/message"}).encode() + b"]"
            return self.reply(200, body)
        if method == "big":
            pad = "x" * args.big
            return self.reply(200, result({"pad": pad}))
        if method == "close":
            self.close_connection = True
            return self.reply(200, result({"closing": True}), extra=[("Connection", "close")])
        if method == "forget":
            sessions.discard(sid)
            return self.reply(200, result({"forgot": sid}))
        return self.reply(200, result({"echo": method, "session": sid}))


    def do_GET(self):
        # The session's stream: two server-initiated messages, then its end.
        sid = self.headers.get("Mcp-Session-Id")
        log("GET session %s accept %s" % (sid, self.headers.get("Accept")))
        if sid not in sessions:
            return self.reply(404 if sid else 400)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for m in ({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"},
                  {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}):
            ev = b"data: " + json.dumps(m).encode() + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        log("server error: %s" % (sys.exc_info()[1],))


srv = S(("127.0.0.1", 0), H)
if not args.plain:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3 if args.tls13 else ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    # The handshake runs in the connection's thread, not in accept.
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
print(srv.server_address[1], flush=True)
srv.serve_forever()
