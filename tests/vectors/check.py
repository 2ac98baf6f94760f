#!/usr/bin/python3
"""An independent verifier of assent's evidence, written from docs/verification.md alone
(Python's standard library and the cryptography module; no assent code): approval tokens,
canonical CBOR ledger entries, RFC 9162 hashes and inclusion proofs, signed checkpoints, and
witnesses' cosignatures (C2SP tlog-cosignature, cosignature/v1).

check_vector(v, dir) raises Refused(reason) when the vector's object must be refused and
returns when it holds. As a program it checks every vector of manifest.json and prints TAP:

    tests/vectors/check.py [manifest.json]"""
import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
TIME_MAX = 253402300799
ASSURANCES = ("reviewer", "policy", "same-user", "self-attested")


class Refused(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Refused(why)


# ---- encodings (section "Notation") ----
def b64_strict(s):
    """base64 with padding, one spelling per value."""
    if isinstance(s, bytes):
        s = s.decode("ascii", "replace")
    try:
        b = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise Refused("not base64")
    need(base64.b64encode(b).decode() == s, "not canonical base64")
    return b


def b64u_strict(s):
    """base64url without padding, one spelling per value."""
    need(re.fullmatch(r"[A-Za-z0-9_-]*", s) is not None and len(s) % 4 != 1, "not base64url")
    try:
        b = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (binascii.Error, ValueError):
        raise Refused("not base64url")
    need(base64.urlsafe_b64encode(b).decode().rstrip("=") == s, "not canonical base64url")
    return b


def hex32(s):
    need(isinstance(s, str) and re.fullmatch(r"[0-9a-f]{64}", s) is not None, "not 64 lowercase hex digits")
    return bytes.fromhex(s)


def json_strict(b):
    """RFC 8259 JSON in UTF-8, restricted as the notation says: no duplicate names, strings of
    Unicode scalar values without U+0000, integers within 64 signed bits, finite numbers."""
    if isinstance(b, bytes):
        try:
            b = b.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("JSON not UTF-8")

    def p_int(x):
        need(-2 ** 63 <= int(x) < 2 ** 63, "JSON integer beyond 64 signed bits")
        return int(x)

    def p_float(x):
        need(abs(float(x)) != float("inf"), "JSON number overflows")
        return float(x)

    def text_ok(x):
        need("\x00" not in x, "U+0000 in a JSON string")
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused("a lone surrogate in a JSON string")

    def walk(v):
        if isinstance(v, str):
            text_ok(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                text_ok(k)
                walk(x)
        return v

    def pairs(ps):
        d = {}
        for k, v in ps:
            need(k not in d, f"duplicate JSON key {k!r}")
            d[k] = v
        return d

    def no_const(c):
        raise Refused(f"JSON constant {c}")

    try:
        return walk(json.loads(b, object_pairs_hook=pairs, parse_constant=no_const, parse_int=p_int,
                               parse_float=p_float))
    except (ValueError, UnicodeDecodeError) as e:
        if isinstance(e, Refused):
            raise
        raise Refused(f"not JSON: {e}")


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


# ---- section 1: approval tokens ----
def jwk_thumbprint(x, y):
    s = '{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}' % (x, y)
    return base64.urlsafe_b64encode(hashlib.sha256(s.encode()).digest()).rstrip(b"=").decode()


def b64u_int(i):
    return base64.urlsafe_b64encode(i.to_bytes(32, "big")).rstrip(b"=").decode()


def token_keys(a, d):
    """kid -> ("ES256", public key) | ("HS256", secret) | ("refused", why)."""
    keys = {}
    if "key" in a:
        pub = serialization.load_pem_public_key(open(os.path.join(d, a["key"]), "rb").read())
        n = pub.public_numbers()
        keys[jwk_thumbprint(b64u_int(n.x), b64u_int(n.y))] = ("ES256", pub)
    if "jwks" in a:
        for k in json.load(open(os.path.join(d, a["jwks"])))["keys"]:
            if k.get("kty") != "EC" or k.get("crv") != "P-256" or not all(
                    isinstance(k.get(f), str) for f in ("kid", "x", "y")):
                continue
            why = None
            if "use" in k and k["use"] != "sig":
                why = "use is not sig"
            elif "alg" in k and k["alg"] != "ES256":
                why = "alg is not ES256"
            elif "key_ops" in k:
                ops = k["key_ops"]
                if not isinstance(ops, list) or "verify" not in ops or any(o not in ("sign", "verify") for o in ops):
                    why = "key_ops"
            if why:
                keys.setdefault(k["kid"], ("refused", why))
                continue
            x, y = b64u_strict(k["x"]), b64u_strict(k["y"])
            pub = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                                ec.SECP256R1()).public_key()
            if keys.get(k["kid"], ("refused",))[0] == "refused":
                keys[k["kid"]] = ("ES256", pub)
    if "secret_file" in a:
        secret = open(os.path.join(d, a["secret_file"]), "rb").read()
        keys["hs256-" + hashlib.sha256(b"assent-kid" + secret).hexdigest()[:16]] = ("HS256", secret)
    return keys


def check_token(tok, a, d):
    # 1. shape
    need(0 < len(tok) <= 16384, "token empty or over 16384 bytes")
    need(re.fullmatch(r"[A-Za-z0-9_.-]+", tok) is not None, "a character outside base64url and '.'")
    parts = tok.split(".")
    need(len(parts) == 3, "not three parts")
    need(parts[2] != "", "no signature")
    # 2. header
    h = json_strict(b64u_strict(parts[0]))
    need(isinstance(h, dict), "header not an object")
    need(isinstance(h.get("alg"), str) and isinstance(h.get("kid"), str), "header lacks alg or kid")
    need("crit" not in h, "crit")
    # 3. key by kid
    keys = token_keys(a, d)
    need(h["kid"] in keys, "unknown kid")
    kind, key = keys[h["kid"]]
    need(kind != "refused", f"JWKS key refused: {key}")
    # 4. one algorithm per key
    need(h["alg"] == kind, f"algorithm {h['alg']} refused")
    # 5. signature
    msg = (parts[0] + "." + parts[1]).encode()
    sig = b64u_strict(parts[2])
    if kind == "HS256":
        need(len(sig) == 32, "HS256 signature not 32 bytes")
        need(hmac.compare_digest(hmac.new(key, msg, "sha256").digest(), sig), "signature does not verify")
    else:
        need(len(sig) == 64, "ES256 signature not 64 bytes")
        r, s = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
        need(1 <= r < N and 1 <= s < N, "r or s out of range")
        need(s <= N // 2, "high s")
        try:
            key.verify(encode_dss_signature(r, s), msg, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Refused("signature does not verify")
    # 6. claims
    c = json_strict(b64u_strict(parts[1]))
    need(isinstance(c, dict), "claims not an object")
    # 7.
    need(c.get("token_type") == "assent/approval/v1", "token_type")
    if "iss" in a:
        need(c.get("iss") == a["iss"], "wrong issuer")
    aud = c.get("aud")
    need(aud == a["aud"] or (isinstance(aud, list) and a["aud"] in aud), "wrong audience")
    # 8. time
    now, leeway = a["now"], a.get("leeway", 60)
    for t in ("exp", "nbf", "iat"):
        need(is_int(c.get(t)), f"{t} missing or not an integer")
        need(0 <= c[t] <= TIME_MAX, f"{t} outside 0..year 9999")
    need(now <= c["exp"] + leeway, "expired")
    need(now + leeway >= c["nbf"], "not valid yet")
    need(now + leeway >= c["iat"], "issued in the future")
    # 9. outcome
    need(c.get("approved") is True, "approved is not true")
    need(c.get("decision") == "approved", "decision is not approved")
    # 10.
    need(c.get("assurance") in ASSURANCES, "assurance")
    # 11. the caller's artifacts
    subjects = c.get("subject") if isinstance(c.get("subject"), list) else []

    def digest(sj):
        dg = sj.get("digest") if isinstance(sj, dict) else None
        return dg.get("sha256") if isinstance(dg, dict) else None

    supplied = list(a.get("subject_sha256", []))
    for f in a.get("subject", []):
        supplied.append(hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest())
    for hx in supplied:
        need(any(digest(sj) == hx for sj in subjects), "the caller's artifact is not among the subjects")
    if a.get("require_computed"):
        computed = lambda sj: isinstance(sj, dict) and sj.get("digest_source") == "computed"
        if supplied:
            for hx in supplied:
                need(any(digest(sj) == hx and computed(sj) for sj in subjects), "subject asserted, not computed")
        else:
            need(subjects and all(computed(sj) for sj in subjects), "subjects not all computed")
    # 12. the action
    if "action_sha256" in a:
        want = a["action_sha256"][7:] if a["action_sha256"].startswith("sha256:") else a["action_sha256"]
        need(c.get("action") == "sha256:" + want, "action digest differs")
    # 13. the decision entry on the ledger
    if "ledger" in a:
        check_token_ledger(c, json.load(open(os.path.join(d, a["ledger"]))))


def check_token_ledger(c, doc):
    lg = c.get("ledger") if isinstance(c.get("ledger"), dict) else {}
    seq = lg.get("seq")
    need(is_int(seq) and seq >= 0, "ledger claim malformed")
    want = hex32(lg.get("leaf_hash"))
    need(isinstance(c.get("session_id"), str) and isinstance(c.get("jti"), str), "ledger claim malformed")
    entries = [b64_strict(e) for e in doc["entries"]]
    need(seq < len(entries), f"no entry {seq}")
    prev = bytes(32)
    for i, e in enumerate(entries[:seq + 1]):
        f = check_entry(e, i)
        need(f["prev"] == prev, f"the chain breaks at entry {i}")
        prev = leaf_hash(e)
    need(prev == want, "the entry's leaf hash differs from the token's")
    text = lambda x: x[1] if isinstance(x, tuple) and x[0] == "text" else None
    need(text(f["kind"]) == "decision", "the entry is not a decision")
    need(text(f.get("outcome")) == "approved", "the decision does not approve")
    need(text(f.get("session_id")) == c["session_id"], "the decision is of another session")
    tk = f.get("token")
    jti = dict((text(k), v) for k, v in tk[1]).get("jti") if isinstance(tk, tuple) and tk[0] == "map" else None
    need(text(jti) == c["jti"], "the decision records another token")


# ---- section 2: canonical CBOR and entries ----
class Cbor:
    def __init__(self, b):
        self.b, self.o = b, 0

    def byte(self):
        need(self.o < len(self.b), "CBOR truncated")
        self.o += 1
        return self.b[self.o - 1]

    def take(self, n):
        need(n <= len(self.b) - self.o, "CBOR truncated")
        self.o += n
        return self.b[self.o - n:self.o]

    def head(self):
        ib = self.byte()
        major, info = ib >> 5, ib & 31
        if info < 24:
            return major, info, info
        need(info <= 27, "indefinite length or reserved additional information")
        need(major != 7, "float or extended simple value")
        nb = 1 << (info - 24)
        arg = int.from_bytes(self.take(nb), "big")
        need(arg >= {1: 24, 2: 0x100, 4: 0x10000, 8: 0x100000000}[nb], "not in shortest form")
        return major, info, arg

    def item(self, depth=0):
        major, info, arg = self.head()
        if major == 0:
            return arg
        if major == 1:
            return -1 - arg
        if major == 2:
            return bytes(self.take(arg))
        if major == 3:
            try:
                return ("text", bytes(self.take(arg)).decode("utf-8"))
            except UnicodeDecodeError:
                raise Refused("text not UTF-8")
        if major == 6:
            raise Refused("tag")
        if major == 7:
            need(info in (20, 21, 22), "simple value other than false, true, null")
            return {20: False, 21: True, 22: None}[info]
        need(depth < 32, "nested deeper than 32")
        if major == 4:
            return [self.item(depth + 1) for _ in range(arg)]
        pairs, prev = [], None
        for _ in range(arg):
            start = self.o
            k = self.item(depth + 1)
            enc = self.b[start:self.o]
            if prev is not None:
                need(enc != prev, "duplicate map key")
                need(prev < enc, "map keys not sorted by their encoding")
            prev = enc
            pairs.append((k, self.item(depth + 1)))
        return ("map", pairs)


def cbor_decode(b):
    need(len(b) <= 1 << 20, "entry over 1 MiB")
    d = Cbor(b)
    v = d.item()
    need(d.o == len(b), "trailing bytes")
    return v


KINDS = {
    "request": {"session_id": "t", "type": "t", "message": "t"},
    "decision": {"session_id": "t", "outcome": "t"},
    "timeout": {"session_id": "t", "reason": "t"},
    "cancelled": {"session_id": "t", "reason": "t"},
    "abandoned": {"session_id": "t", "reason": "t"},
    "policy_load": {"digest": "t", "source": "t"},
    "key": {"purpose": "t", "kid": "t", "event": "t"},
    "identity": {"event": "t", "name": "t"},
    "webhook": {"event": "t", "name": "t", "host": "t"},
    "approval": {"session_id": "t", "reviewer": "any", "n": "u", "quorum": "u"},
    "dispatch": {"session_id": "t", "upstream": "t", "tool": "t", "call": "t"},
    "outcome": {"session_id": "t", "status": "t"},
    "reveal": {"session_id": "t", "reviewer": "any"},
}


def check_entry(b, seq):
    e = cbor_decode(b)
    need(isinstance(e, tuple) and e[0] == "map", "entry is not a map")
    f = {}
    for k, v in e[1]:
        need(isinstance(k, tuple) and k[0] == "text", "a key that is not text")
        f[k[1]] = v
    u = lambda x: is_int(x) and x >= 0
    need(f.get("v") == 1 and u(f.get("v")), "v is not 1")
    need(u(f.get("seq")), "seq missing")
    need(f["seq"] == seq, f"seq {f['seq']} at position {seq}")
    need(u(f.get("time")), "time missing")
    need(isinstance(f.get("prev"), bytes) and len(f["prev"]) == 32, "prev not 32 bytes")
    kind = f.get("kind")
    need(isinstance(kind, tuple) and kind[0] == "text", "kind missing")
    need(kind[1] in KINDS, f"unknown kind {kind[1]!r}")
    for name, t in KINDS[kind[1]].items():
        need(name in f, f"kind {kind[1]} requires {name}")
        if t == "t":
            need(isinstance(f[name], tuple) and f[name][0] == "text", f"{name} must be text")
        if t == "u":
            need(u(f[name]), f"{name} must be unsigned")
    return f


# ---- RFC 9162 ----
def leaf_hash(b):
    return hashlib.sha256(b"\x00" + b).digest()


def node_hash(l, r):
    return hashlib.sha256(b"\x01" + l + r).digest()


def mth(leaves):
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def verify_inclusion(index, size, leaf, path, root):
    """RFC 9162 section 2.1.3.2."""
    need(index < size, "index not below tree_size")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        need(sn != 0, "path too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while (fn & 1) == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    need(sn == 0, "path too short")
    need(r == root, "the path does not lead to the root")


# ---- section 3: checkpoints ----
def der_sig(b):
    """DER ECDSA-Sig-Value -> (r, s), refusing every other spelling."""
    need(len(b) >= 2 and b[0] == 0x30 and b[1] < 0x80 and b[1] == len(b) - 2, "signature is not DER")
    o, out = 2, []
    for _ in range(2):
        need(o + 2 <= len(b) and b[o] == 0x02 and 1 <= b[o + 1] < 0x80, "signature is not DER")
        n = b[o + 1]
        v = b[o + 2:o + 2 + n]
        need(len(v) == n, "signature is not DER")
        need(not v[0] & 0x80, "negative integer")
        need(not (v[0] == 0 and (n == 1 or not v[1] & 0x80)), "integer not minimal")
        out.append(int.from_bytes(v, "big"))
        o += 2 + n
    need(o == len(b), "signature is not DER")
    return out


def check_checkpoint(note, pub):
    need(len(note) <= 4096, "over 4096 bytes")
    need(all(c >= 0x20 or c == 0x0a for c in note), "control character")
    try:
        text = note.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("not UTF-8")
    head, sep, sigs = text.partition("\n\n")
    need(sep != "", "no blank line after the body")
    lines = head.split("\n")
    need(len(lines) == 3, "the body is not three lines")
    origin, size, root64 = lines
    origin_ok = lambda s: 1 <= len(s) <= 255 and all(0x21 <= ord(ch) <= 0x7e and ch != "+" for ch in s)
    need(origin_ok(origin), "bad origin")
    need(re.fullmatch(r"0|[1-9][0-9]*", size) is not None and int(size) < 2 ** 64, "bad size")
    root = b64_strict(root64)
    need(len(root) == 32, "root not 32 bytes")
    body = (head + "\n").encode()
    keyid = hashlib.sha256(pub.public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)).digest()[:4]
    need(sigs.endswith("\n"), "signature line without its final newline")
    sig_lines = sigs[:-1].split("\n")
    need(sigs != "" and len(sig_lines) <= 100, "no signature line, or over 100")
    good = 0
    for ln in sig_lines:
        m = re.fullmatch(r"\u2014 (\S+) (\S+)", ln)
        need(m is not None, "malformed signature line")
        name, blob = m.group(1), m.group(2)
        need(origin_ok(name), "bad key name")
        blob = b64_strict(blob)
        need(len(blob) >= 5, "signature line too short")
        if blob[:4] != keyid:
            continue
        need(name == origin, "the key's signature under another name")
        r, s = der_sig(blob[4:])
        need(1 <= r < N and 1 <= s < N, "r or s out of range")  # either s: low or high
        try:
            pub.verify(encode_dss_signature(r, s), body, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Refused("checkpoint signature does not verify")
        good += 1
    need(good > 0, "no signature by the trusted key")
    return origin, int(size), root


PROOF_FIELDS = {"origin", "index", "tree_size", "leaf_hash", "entry", "path", "root", "checkpoint"}


def check_proof(p_bytes, pub, given=None):
    p = json_strict(p_bytes)
    need(isinstance(p, dict) and set(p) == PROOF_FIELDS, "not exactly the fields of a proof")
    need(is_int(p["index"]) and p["index"] >= 0 and is_int(p["tree_size"]) and p["tree_size"] >= 0,
         "index or tree_size")
    leaf, root = hex32(p["leaf_hash"]), hex32(p["root"])
    need(isinstance(p["path"], list) and len(p["path"]) <= 64, "path")
    path = [hex32(h) for h in p["path"]]
    need(isinstance(p["entry"], str), "entry")
    entry = b64_strict(p["entry"])
    need(leaf_hash(entry) == leaf, "entry does not hash to leaf_hash")
    check_entry(entry, p["index"])
    ck = given
    if ck is None:
        need(isinstance(p["checkpoint"], str), "no checkpoint")
        ck = p["checkpoint"].encode()
    origin, size, ckroot = check_checkpoint(ck, pub)
    if not (p["origin"] is None and p["checkpoint"] is None):
        need(p["origin"] == origin, "origin differs from the checkpoint's")
    if given is not None and p["checkpoint"] is not None:
        need(p["checkpoint"].encode() == given, "the proof's checkpoint differs from the one given")
    need(size == p["tree_size"] and ckroot == root, "tree size or root differs from the checkpoint")
    verify_inclusion(p["index"], p["tree_size"], leaf, path, root)


def check_ledger(doc, pub):
    """Section 2 over a whole ledger: every entry canonical at its position, linked to the one
    before, times never going backwards; every checkpoint signed by the key and matching the tree
    at its size; the newest one covering the head."""
    need(isinstance(doc.get("entries"), list) and isinstance(doc.get("checkpoints"), list), "not a ledger vector")
    entries = [b64_strict(e) for e in doc["entries"]]
    prev, last = bytes(32), 0
    leaves = []
    for i, e in enumerate(entries):
        f = check_entry(e, i)
        need(f["prev"] == prev, f"entry {i}: prev is not the leaf hash of the entry before")
        need(f["time"] >= last, f"entry {i}: time goes backwards")
        last = f["time"]
        prev = leaf_hash(e)
        leaves.append(prev)
    top = 0
    for c in doc["checkpoints"]:
        _, size, root = check_checkpoint(c.encode(), pub)
        need(size <= len(entries), f"a checkpoint covers {size} entries, the ledger has {len(entries)}")
        need(mth(leaves[:size]) == root, f"the root at size {size} differs from the checkpoint's")
        top = max(top, size)
    need(top == len(entries), f"entries {top} to {len(entries) - 1} are not covered by a checkpoint")


# ---- section 3b: witnesses' cosignatures ----
def parse_vkey(s):
    """NAME+KEYIDHEX+base64(0x04 || Ed25519 key) -> (name, keyid, Ed25519PublicKey); Refused otherwise."""
    parts = s.split("+", 2)  # the name has no '+'; the key's base64 may have some
    need(len(parts) == 3, "a vkey is NAME+KEYID+KEY")
    name, idhex, key64 = parts
    need(1 <= len(name) <= 255 and all(0x21 <= ord(ch) <= 0x7e for ch in name), "bad witness name")
    need(re.fullmatch(r"[0-9a-f]{8}", idhex) is not None, "the key ID is not 8 lowercase hex digits")
    key = b64_strict(key64)
    need(len(key) == 33, "the key is not 33 bytes")
    need(key[0] == 0x04, "key type is not 0x04")
    need(hashlib.sha256(name.encode() + b"\n" + key).digest()[:4].hex() == idhex, "the key ID does not match")
    return name, bytes.fromhex(idhex), Ed25519PublicKey.from_public_bytes(key[1:])


def count_cosignatures(note, witnesses):
    """How many distinct witnesses (name, keyid, key) validly cosigned note; a line with a
    witness's name and key ID that does not verify is refused."""
    head, _, sigs = note.decode("utf-8").partition("\n\n")
    body = (head + "\n").encode()
    seen = set()
    for ln in sigs[:-1].split("\n"):
        m = re.fullmatch(r"\u2014 (\S+) (\S+)", ln)
        need(m is not None, "malformed signature line")
        blob = b64_strict(m.group(2))
        for i, (name, kid, pub) in enumerate(witnesses):
            if m.group(1) != name or blob[:4] != kid:
                continue
            need(len(blob) == 76, f"cosignature by {name} is not 76 bytes")
            t = int.from_bytes(blob[4:12], "big")
            need(t < 2 ** 63, f"cosignature by {name}: timestamp over 2^63 - 1")
            try:
                pub.verify(blob[12:], b"cosignature/v1\ntime " + str(t).encode() + b"\n" + body)
            except InvalidSignature:
                raise Refused(f"cosignature by {name} does not verify")
            seen.add(i)
    return len(seen)


def check_vector(v, d):
    a = v.get("args", {})
    rd = lambda f: open(os.path.join(d, f), "rb").read()
    if v["object"] == "token":
        check_token(rd(v["file"]).decode().strip("\n"), a, d)
    elif v["object"] == "entry":
        check_entry(rd(v["file"]), a["seq"])
    elif v["object"] == "tree" and "args" not in v:
        t = json.loads(rd(v["file"]))
        entries = [rd(f) for f in t["entries"]]
        leaves = [leaf_hash(e) for e in entries]
        need([x.hex() for x in leaves] == t["leaf_hashes"], "leaf hashes differ")
        need(node_hash(leaves[0], leaves[1]).hex() == t["node_hash_0_1"], "node hash differs")
        for size, root in t["roots"].items():
            need(mth(leaves[:int(size)]).hex() == root, f"root at size {size} differs")
    elif v["object"] == "tree":
        check_proof(rd(v["file"]), serialization.load_pem_public_key(rd(a["key"])))
    elif v["object"] == "ledger":
        check_ledger(json.loads(rd(v["file"])), serialization.load_pem_public_key(rd(a["key"])))
    elif v["object"] == "checkpoint":
        check_proof(rd(a["proof"]), serialization.load_pem_public_key(rd(a["key"])), given=rd(v["file"]))
    elif v["object"] == "cosig":
        note = rd(v["file"])
        check_checkpoint(note, serialization.load_pem_public_key(rd(a["key"])))
        ws = [parse_vkey(rd(w).decode().strip("\n")) for w in a["witnesses"]]
        n = count_cosignatures(note, ws)
        need(n >= a["threshold"], f"cosigned by {n} witnesses, fewer than {a['threshold']}")
    elif v["object"] == "vkey":
        parse_vkey(rd(v["file"]).decode().strip("\n"))
    else:
        raise ValueError(v["object"])


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "manifest.json")
    d = os.path.dirname(os.path.abspath(path))
    n = bad = 0
    for v in json.load(open(path))["vectors"]:
        n += 1
        try:
            check_vector(v, d)
            got = "valid"
        except Refused as e:
            got = f"invalid ({e})"
        ok = got.split(" ")[0] == v["expect"]
        bad += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {v['id']}: {got}")
    print(f"1..{n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
