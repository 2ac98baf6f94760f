"""Independent client and attacker for the approval-token tests (tests/integration/token.sh).
Run with /usr/bin/python3: it needs Debian's python3-jwt, python3-cryptography and python3-lmdb.

  token_forge.py COMMAND ARGS...   (tokens are read from an argument; outputs go to stdout)
  token_forge.py serve             reads "COMMAND<TAB>ARG..." lines, answers each with one line,
                                   "ok<TAB>OUTPUT" or "error<TAB>REASON" (one interpreter start)

Verifying like a third party would (PyJWT, nothing of ours):
  pyverify-pem TOKEN PUB.pem AUD           ES256 with the exported PEM; prints the claims
  pyverify-jwks TOKEN jwks.json AUD        ES256 with the JWK whose kid the header names
  pyverify-hs256 TOKEN SECRET AUD          HS256 with the shared secret
Forging:
  resign TOKEN KEY.pem KID [K=JSON]... [-K]...   re-sign TOKEN's claims with the private key,
        after setting claim K to the JSON value (dotted K sets inside objects) or deleting it
  fresh-key-sign TOKEN KID                 sign TOKEN's claims with a new P-256 key of our own
  confuse TOKEN PUB.pem KID MODE           HS256 keyed with the public key PEM bytes (MODE: raw,
        strip, nul); built by hand since PyJWT refuses PEM HMAC keys
  hs-sign TOKEN SECRET KID                 HS256 with SECRET, header kid KID, TOKEN's claims
  none TOKEN KID SIG [ALG]                 header {"alg": ALG (default none), "kid": KID},
        the real payload, signature SIG ("" for empty)
  swap-alg TOKEN ALG                       same payload and signature, header alg replaced
  edit-payload TOKEN K=JSON                payload changed after signing, signature kept
  flip-sig TOKEN POS                       one base64url char of the signature changed (POS index)
  random SEED N [ascii]                    N pseudo-random bytes (raw, or base64url-ish ASCII)
  random-files PREFIX SEED:N...            N pseudo-random bytes into the file PREFIX.SEED, each
  claims TOKEN                             the payload as JSON (unverified)
Ledger (LMDB, as an attacker with write access):
  alter LEDGER_DIR SEQ OLD NEW             replace bytes OLD by NEW (same length) in entry SEQ
  delete LEDGER_DIR SEQ                    delete entry SEQ
"""
import base64
import hashlib
import hmac
import json
import random
import struct
import sys

import jwt
from cryptography.hazmat.primitives.asymmetric import ec


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64u(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def parts(tok):
    h, p, s = tok.split(".")
    return json.loads(unb64u(h)), json.loads(unb64u(p)), s


def enc_json(o):
    return b64u(json.dumps(o, separators=(",", ":")).encode())


def set_path(obj, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        obj = obj.setdefault(k, {})
    if value is _DELETE:
        obj.pop(keys[-1], None)
    else:
        obj[keys[-1]] = value


_DELETE = object()


# P-256's group order. (r, s) and (r, N - s) are both valid ECDSA signatures; assent
# issues the low s and assent-verify refuses the high one. PyJWT signs with either.
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def with_s(tok, high):
    """The token with its ES256 signature's s made high (N - s) or low, as asked."""
    h, p, sig = tok.split(".")
    raw = unb64u(sig)
    r, s_ = raw[:32], int.from_bytes(raw[32:], "big")
    if (s_ > N // 2) != high:
        s_ = N - s_
    return h + "." + p + "." + b64u(r + s_.to_bytes(32, "big"))


def apply_edits(claims, edits):
    for e in edits:
        if e.startswith("-"):
            set_path(claims, e[1:], _DELETE)
        else:
            k, v = e.split("=", 1)
            set_path(claims, k, json.loads(v))
    return claims


def run(argv):
    """One command; returns its output as text (or bytes), or None."""
    cmd, a = argv[0], argv[1:]
    if cmd == "pyverify-pem":
        tok, pem, aud = a
        key = open(pem, "rb").read()
        c = jwt.decode(tok, key, algorithms=["ES256"], audience=aud)
        return json.dumps(c)
    elif cmd == "pyverify-jwks":
        tok, jwks, aud = a
        kid = jwt.get_unverified_header(tok)["kid"]
        found = [k for k in json.load(open(jwks))["keys"] if k.get("kid") == kid]
        if len(found) != 1:
            sys.exit("no single JWK with kid %s" % kid)
        key = jwt.algorithms.ECAlgorithm.from_jwk(json.dumps(found[0]))
        c = jwt.decode(tok, key, algorithms=["ES256"], audience=aud)
        return json.dumps(c)
    elif cmd == "pyverify-hs256":
        tok, secret, aud = a
        c = jwt.decode(tok, secret, algorithms=["HS256"], audience=aud)
        return json.dumps(c)
    elif cmd == "resign":
        tok, keyfile, kid = a[:3]
        _, claims, _ = parts(tok)
        apply_edits(claims, a[3:])
        key = open(keyfile, "rb").read()
        return with_s(jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid}), False)
    elif cmd == "fresh-key-sign":
        tok, kid = a
        _, claims, _ = parts(tok)
        key = ec.generate_private_key(ec.SECP256R1())
        return with_s(jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid}), False)
    elif cmd == "high-s":  # the same signature, malleated: still valid ECDSA
        return with_s(a[0], True)
    elif cmd == "s-form":  # "low" or "high"
        return "high" if int.from_bytes(unb64u(a[0].split(".")[2])[32:], "big") > N // 2 else "low"
    elif cmd == "jwks-edit":  # JWKS IN OUT EDIT...: each edit applies to every key
        j = json.load(open(a[0]))
        for k in j["keys"]:
            apply_edits(k, a[2:])
        json.dump(j, open(a[1], "w"))
    elif cmd == "confuse":
        tok, pem, kid, mode = a
        secret = open(pem, "rb").read()
        if mode == "strip":
            secret = secret.rstrip(b"\n")
        elif mode == "nul":
            secret = secret + b"\0"
        _, claims, _ = parts(tok)
        signing_input = enc_json({"alg": "HS256", "kid": kid, "typ": "JWT"}) + "." + enc_json(claims)
        sig = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return signing_input + "." + b64u(sig)
    elif cmd == "hs-sign":
        tok, secret, kid = a
        _, claims, _ = parts(tok)
        return jwt.encode(claims, secret, algorithm="HS256", headers={"kid": kid})
    elif cmd == "none":
        tok, kid, sig = a[:3]
        alg = a[3] if len(a) > 3 else "none"
        p = tok.split(".")[1]
        return enc_json({"alg": alg, "kid": kid}) + "." + p + "." + sig
    elif cmd == "swap-alg":
        tok, alg = a
        h, _, _ = parts(tok)
        h["alg"] = alg
        _, p, s = tok.split(".")
        return enc_json(h) + "." + p + "." + s
    elif cmd == "edit-payload":
        tok = a[0]
        h, p, s = tok.split(".")
        _, claims, _ = parts(tok)
        apply_edits(claims, a[1:])
        return h + "." + enc_json(claims) + "." + s
    elif cmd == "flip-sig":
        tok, pos = a[0], int(a[1])
        h, p, s = tok.split(".")
        c = s[pos]
        s = s[:pos] + ("A" if c != "A" else "B") + s[pos + 1:]
        return h + "." + p + "." + s
    elif cmd == "random":
        rng = random.Random(int(a[0]))
        n = int(a[1])
        if len(a) > 2 and a[2] == "ascii":
            al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
            return "".join(rng.choice(al) for _ in range(n))
        else:
            return bytes(rng.randrange(256) for _ in range(n))
    elif cmd == "random-files":
        for spec in a[1:]:
            seed, n = spec.split(":")
            with open("%s.%s" % (a[0], seed), "wb") as f:
                f.write(run(["random", seed, n]))
    elif cmd == "claims":
        return json.dumps(parts(a[0])[1])
    elif cmd in ("alter", "delete"):
        import lmdb
        env = lmdb.open(a[0], max_dbs=4, create=False)
        db = env.open_db(b"entries")
        key = struct.pack(">Q", int(a[1]))
        with env.begin(db=db, write=True) as t:
            v = t.get(key)
            if v is None:
                sys.exit("no entry %s" % a[1])
            if cmd == "delete":
                t.delete(key)
            else:
                old, new = a[2].encode(), a[3].encode()
                if len(old) != len(new) or v.count(old) != 1:
                    sys.exit("'%s' is not in entry %s exactly once" % (a[2], a[1]))
                t.put(key, v.replace(old, new))
        env.close()
    else:
        sys.exit("unknown command " + cmd)


def main(argv):
    if argv[0] == "serve":
        # One request per line on stdin, "COMMAND<TAB>ARG...", one answer line each: "ok<TAB>OUTPUT"
        # or "error<TAB>REASON". One interpreter start serves the whole test script.
        for line in sys.stdin:
            try:
                out = run(line.rstrip("\n").split("\t"))
                if isinstance(out, bytes) or "\n" in (out or ""):
                    raise ValueError("output is not one line of text")
                ans = "ok\t" + (out or "")
            except BaseException as e:  # sys.exit too: the server must answer every line
                ans = "error\t%s: %s" % (type(e).__name__, str(e).replace("\n", " "))
            sys.stdout.write(ans + "\n")
            sys.stdout.flush()
        return
    out = run(argv)
    if isinstance(out, bytes):
        sys.stdout.buffer.write(out)
    elif out is not None:
        sys.stdout.write(out + ("\n" if argv[0] != "random" else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
