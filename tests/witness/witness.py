#!/usr/bin/env python3
"""An independent C2SP tlog-witness, for the tests: written from the specifications
(c2sp.org/tlog-witness, tlog-cosignature, tlog-checkpoint, signed-note; RFC 9162 for the
consistency proof) and sharing no code with assent. Its Merkle and note code are its own;
the `cryptography` package does the Ed25519 signing and the ECDSA P-256 check of the log's
signature (SHA-256).

  witness.py serve --key KEY --name NAME --port PORT --state STATE.json \\
                   --log-key checkpoint.pub --origin ORIGIN [--prefix /] [--forge]
  witness.py vkey --key KEY --name NAME          print its note verifier key
  witness.py check NOTE VKEY... [--threshold N]  how many cosignatures in NOTE verify

KEY is a file of 32 bytes (an Ed25519 seed), made when absent. STATE.json holds, per origin,
the latest cosigned size and root. --forge: every cosignature it returns has a byte of its
signature flipped (a witness whose cosignatures must be refused).
"""
import base64
import hashlib
import json
import os
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

DASH = '\u2014 '


def load_key(path):
    if not os.path.exists(path):
        with open(path, 'wb') as f:
            f.write(os.urandom(32))
    return ed25519.Ed25519PrivateKey.from_private_bytes(open(path, 'rb').read())


def raw_pub(priv):
    return priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def ed_key_id(name, pub):
    return hashlib.sha256(name.encode() + b'\n' + b'\x04' + pub).digest()[:4]


def vkey(name, pub):
    return '%s+%s+%s' % (name, ed_key_id(name, pub).hex(), base64.b64encode(b'\x04' + pub).decode())


# ---- RFC 9162 ----

def node(l, r):
    return hashlib.sha256(b'\x01' + l + r).digest()


def verify_consistency(first, second, first_hash, second_hash, proof):
    """RFC 9162 section 2.1.4.2, step by step."""
    if first > second:
        return False
    if first == second:
        return not proof and first_hash == second_hash
    if first == 0 or not proof and first & (first - 1) != 0:
        return False
    if first & (first - 1) == 0:
        proof = [first_hash] + proof
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


# ---- signed notes ----

def split_note(text):
    """(body bytes including its final newline, [signature lines]) or None."""
    if b'\n\n' not in text or not text.endswith(b'\n'):
        return None
    i = text.index(b'\n\n')
    body, sigs = text[:i + 1], text[i + 2:]
    lines = sigs.decode('utf-8', 'strict').split('\n')[:-1]
    return body, lines


def parse_checkpoint(body):
    lines = body.decode('ascii').split('\n')[:-1]
    if len(lines) < 3 or not lines[1].isdigit() or (lines[1] != '0' and lines[1].startswith('0')):
        return None
    root = base64.b64decode(lines[2], validate=True)
    if len(root) != 32:
        return None
    return lines[0], int(lines[1]), root


def log_key_id(pub):
    der = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).digest()[:4]


def log_signed(body, sig_lines, origin, pub):
    kid = log_key_id(pub)
    for line in sig_lines:
        if not line.startswith(DASH):
            continue
        name, _, b64 = line[len(DASH):].partition(' ')
        try:
            blob = base64.b64decode(b64, validate=True)
        except ValueError:
            continue
        if name != origin or blob[:4] != kid:
            continue  # unknown keys are ignored (C2SP)
        try:
            pub.verify(blob[4:], body, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            pass
    return False


def cosign(priv, name, body, forge):
    t = int(time.time())
    sig = priv.sign(b'cosignature/v1\ntime %d\n' % t + body)
    if forge:
        sig = bytes([sig[0] ^ 1]) + sig[1:]
    blob = ed_key_id(name, raw_pub(priv)) + struct.pack('>Q', t) + sig
    return DASH + name + ' ' + base64.b64encode(blob).decode() + '\n'


def check_cosig(line, name, pub, body):
    if not line.startswith(DASH + name + ' '):
        return False
    blob = base64.b64decode(line[len(DASH + name + ' '):].rstrip('\n'), validate=True)
    if len(blob) != 76 or blob[:4] != ed_key_id(name, pub):
        return False
    t = struct.unpack('>Q', blob[4:12])[0]
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(pub).verify(blob[12:], b'cosignature/v1\ntime %d\n' % t + body)
        return True
    except InvalidSignature:
        return False


# ---- the add-checkpoint handler ----

class Witness(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    cfg = None

    def log_message(self, fmt, *args):
        sys.stderr.write('witness %s: %s\n' % (self.cfg['name'], fmt % args))

    def answer(self, code, text, ctype='text/plain; charset=utf-8'):
        data = text.encode()
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        cfg = self.cfg
        n = int(self.headers.get('Content-Length') or 0)
        req = self.rfile.read(n)
        if self.path != cfg['prefix'] + 'add-checkpoint':
            return self.answer(404, 'no such endpoint\n')
        try:
            code, text, ctype = self.add_checkpoint(req)
        except (ValueError, UnicodeDecodeError) as e:
            code, text, ctype = 400, 'malformed: %s\n' % e, 'text/plain; charset=utf-8'
        self.answer(code, text, ctype)

    def add_checkpoint(self, req):
        cfg = self.cfg
        head, sep, note = req.partition(b'\n\n')
        if not sep:
            raise ValueError('no blank line')
        lines = head.decode('ascii').split('\n')
        if not lines[0].startswith('old ') or not lines[0][4:].isdigit():
            raise ValueError('no old line')
        if lines[0][4:] != '0' and lines[0][4:].startswith('0'):
            raise ValueError('old has a leading zero')
        old = int(lines[0][4:])
        proof = [base64.b64decode(l, validate=True) for l in lines[1:]]
        if len(proof) > 63 or any(len(p) != 32 for p in proof):
            raise ValueError('bad proof lines')
        parts = split_note(note)
        if not parts:
            raise ValueError('the checkpoint is not a signed note')
        body, sigs = parts
        ck = parse_checkpoint(body)
        if not ck:
            raise ValueError('not a checkpoint')
        origin, size, root = ck
        if origin != cfg['origin']:
            return 404, 'unknown log\n', 'text/plain; charset=utf-8'
        if not log_signed(body, sigs, origin, cfg['log_key']):
            return 403, 'no signature by the log key verifies\n', 'text/plain; charset=utf-8'
        if old > size:
            return 400, 'old size above the checkpoint size\n', 'text/plain; charset=utf-8'
        state = json.load(open(cfg['state'])) if os.path.exists(cfg['state']) else {}
        have = state.get(origin)
        have_size = have['size'] if have else 0
        if old != have_size:
            return 409, '%d\n' % have_size, 'text/x.tlog.size'
        if old == 0:
            if proof:
                raise ValueError('a proof with old 0')
        elif old == size:
            if base64.b64decode(have['root']) != root:
                return 409, '%d\n' % have_size, 'text/x.tlog.size'
        elif not verify_consistency(old, size, base64.b64decode(have['root']), root, proof):
            return 422, 'the consistency proof does not verify\n', 'text/plain; charset=utf-8'
        state[origin] = {'size': size, 'root': base64.b64encode(root).decode()}
        tmp = cfg['state'] + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(state, f)
        os.replace(tmp, cfg['state'])
        return 200, cosign(cfg['priv'], cfg['name'], body, cfg['forge']), 'text/plain; charset=utf-8'


def arg(argv, name, default=None):
    if name in argv:
        return argv[argv.index(name) + 1]
    if default is None:
        sys.exit('witness.py: %s is required' % name)
    return default


def main(argv):
    cmd = argv[0] if argv else ''
    if cmd == 'vkey':
        name = arg(argv, '--name')
        print(vkey(name, raw_pub(load_key(arg(argv, '--key')))))
        return 0
    if cmd == 'check':
        text = open(argv[1], 'rb').read()
        body, sigs = split_note(text)
        keys = [a for a in argv[2:] if '+' in a]
        good = 0
        for k in keys:
            name, kid, b64 = k.split('+', 2)
            pub = base64.b64decode(b64)[1:]
            if any(check_cosig(l + '\n', name, pub, body) for l in sigs):
                good += 1
        print(good)
        return 0 if good >= int(arg(argv, '--threshold', '1')) else 1
    if cmd != 'serve':
        sys.exit(__doc__)
    name = arg(argv, '--name')
    pem = open(arg(argv, '--log-key'), 'rb').read()
    Witness.cfg = {
        'name': name, 'priv': load_key(arg(argv, '--key')), 'state': arg(argv, '--state'),
        'origin': arg(argv, '--origin'), 'prefix': arg(argv, '--prefix', '/'), 'forge': '--forge' in argv,
        'log_key': serialization.load_pem_public_key(pem),
    }
    srv = HTTPServer(('127.0.0.1', int(arg(argv, '--port'))), Witness)
    sys.stderr.write('witness %s: listening on port %d\n' % (name, srv.server_address[1]))
    sys.stderr.flush()
    srv.serve_forever()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
