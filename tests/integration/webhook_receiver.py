#!/usr/bin/env python3
"""A webhook receiver for notify_webhooks.sh: it checks each POST's X-Assent-Signature as the
assent.notify(5) tells receivers to (HMAC-SHA256 over "t.body" with the whole whsec_ secret), and writes
one JSON line per request to LOG: path, headers, body, and whether the signature verified.
Paths: /ok and /slack answer 200, /fail always 500, /flaky 503 the first time per delivery
then 200, /until-open... 503 until a file LOG.open exists, then 200. With --cert/--key it speaks TLS; with --http10 it answers as Python's http.server does by
default (HTTP/1.0, no Content-Length, the body ends with the connection). It prints its port on
stdout, then serves."""
import hashlib, hmac, http.server, json, os, ssl, sys, argparse, time

ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("secrets")  # a JSON file {path: secret}, read at each request (secrets come later)
ap.add_argument("--cert")
ap.add_argument("--key")
ap.add_argument("--http10", action="store_true")
a = ap.parse_args()
seen = {}


def verify(secret, header, body):
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        t, v1 = parts["t"], parts["v1"]
    except Exception:
        return False
    mac = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, v1)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        try:
            secrets = json.load(open(a.secrets))
        except Exception:
            secrets = {}
        secret = secrets.get(self.path, "")
        rec = {
            "t": time.time(),
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
            "verified": bool(secret) and verify(secret, self.headers.get("X-Assent-Signature", ""), body),
        }
        did = self.headers.get("X-Assent-Delivery", "")
        status = 200
        if self.path == "/fail":
            status = 500
        elif self.path.startswith("/until-open"):
            status = 200 if os.path.exists(a.log + ".open") else 503
        elif self.path == "/flaky":
            seen[did] = seen.get(did, 0) + 1
            status = 503 if seen[did] == 1 else 200
        rec["status"] = status
        with open(a.log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        out = b"ok"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        if not a.http10:
            self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


if a.http10:
    H.protocol_version = "HTTP/1.0"
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if a.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
