#!/usr/bin/env python3
"""A TLS front for a plain HTTP server on loopback, for the gate's url upstream tests:
tls_front.py CERT KEY BACKEND_PORT HEADER_LOG. Listens on a free port of 127.0.0.1 (printed
as `PORT n`), terminates TLS with CERT/KEY, and relays bytes both ways to 127.0.0.1:BACKEND_PORT;
the request heads it sees are appended to HEADER_LOG, so a test can show what the client sent."""
import socket, ssl, sys, threading

cert, key, backend, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print("PORT %d" % ls.getsockname()[1], flush=True)


def pump(src, dst, head):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            if head:
                with open(log, "ab") as f:
                    f.write(b.split(b"\r\n\r\n", 1)[0] + b"\n")
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(c):
    try:
        t = ctx.wrap_socket(c, server_side=True)
    except (ssl.SSLError, OSError):
        c.close()
        return
    b = socket.create_connection(("127.0.0.1", backend))
    threading.Thread(target=pump, args=(t, b, True), daemon=True).start()
    pump(b, t, False)


while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
