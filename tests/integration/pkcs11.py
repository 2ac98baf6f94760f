#!/usr/bin/env python3
"""Issue 31 part 3: an approval token signed in a PKCS#11 token (SoftHSM2), checked with
Python's jwt against STATE/keys/jwks.json as a relying party would, offline.
argv: TOKEN-FILE JWKS SESSION-ID"""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done
import jwt

tok, jwks, sid = open(sys.argv[1]).read().strip(), json.load(open(sys.argv[2])), sys.argv[3]
hdr = jwt.get_unverified_header(tok) if tok.count(".") == 2 else {}
kids = [k.get("kid") for k in jwks.get("keys", [])]
ok(hdr.get("alg") == "ES256" and hdr.get("kid") in kids, f"the token is ES256 under a key of jwks.json: {hdr} {kids}")
try:
    key = jwt.PyJWKSet.from_dict(jwks)[hdr.get("kid")].key
    claims = jwt.decode(tok, key, algorithms=["ES256"], audience="assent")
    ok(claims.get("approved") is True and claims.get("session_id") == sid,
       f"Python's jwt verifies the token signed in the HSM against jwks.json (session {claims.get('session_id')})")
except Exception as e:  # noqa: BLE001 - any refusal is the failure to report
    ok(False, f"Python's jwt refuses the token signed in the HSM: {e!r}")
sig = jwt.utils.base64url_decode(tok.split(".")[-1]) if hdr else b""
n_half = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551 // 2
ok(len(sig) == 64 and int.from_bytes(sig[32:], "big") <= n_half, "its signature is r || s with the low s")
plan()
done()
