#!/usr/bin/python3
"""Regenerates the verification vectors of docs/verification.md: valid objects made by the
product itself (build/tests/mint issues tokens, `assent ledger append` and `assent-verify
proof` make a ledger, its checkpoints and inclusion proofs), and invalid ones made from them
here, each the smallest change that must make a verifier refuse it. Writes the files beside
this script and manifest.json, which names each vector's expected result and reason.

    make all build/tests/mint && tests/vectors/gen.py [--out DIR]

Keys in keys/ are test-only keys, committed so that the vectors stay checkable; they are made
once when missing. Times are fixed (the ledger is written under faketime at 2030-01-01, tokens
are issued for 2030-01-01 and checked as of NOW), so entries, leaf hashes and roots come out
the same on every run; ECDSA signatures (tokens, checkpoints) and token ids do not."""
import base64
import hashlib
import hmac
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = HERE  # where the vectors go: here, or --out DIR (tests/integration/vectors.sh compares)
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
T0 = 1893456000  # 2030-01-01T00:00:00Z: tokens are issued then, the ledger is written then
NOW = T0 + 600  # the time every token vector is checked as of (faketime in vectors.sh)
AUD = "tf-prod"
manifest = []


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def b64u_dec(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def put(rel, data):
    p = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return rel


def vec(obj, name, expect, reason, **kw):
    manifest.append(dict(id=f"{obj}/{name}", object=obj, expect=expect, reason=reason, **kw))


def run(cmd, stdin=None, env=None, at=None):
    if at is not None:  # a frozen clock: the same entries, times and roots on every run
        cmd = ["faketime", "-f", at] + cmd
        env = dict(env or os.environ, TZ="UTC")
    r = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
    if r.returncode != 0:
        sys.exit(f"gen: {' '.join(cmd)}: exit {r.returncode}: {r.stderr.decode()[:400]}")
    return r.stdout


# ---- keys (test-only, committed) ----
def load_or_make_key(name):
    p = os.path.join(OUT, "keys", name + ".key")
    if not os.path.exists(p):
        k = ec.generate_private_key(ec.SECP256R1())
        put(f"keys/{name}.key", k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
    k = serialization.load_pem_private_key(open(p, "rb").read(), None)
    put(f"keys/{name}.pub", k.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    return k


def read_lmdb(d):
    """The entries and checkpoints of a ledger's LMDB environment (Python's lmdb, read-only)."""
    import lmdb

    env = lmdb.open(d, max_dbs=4, readonly=True, lock=False)
    out = {"entries": [], "checkpoints": []}
    with env.begin() as txn:
        for name, key in ((b"entries", "entries"), (b"checkpoints", "checkpoints")):
            for _, v in txn.cursor(db=env.open_db(name, txn=txn, create=False)):
                out[key].append(bytes(v) if key == "entries" else bytes(v).decode())
    env.close()
    return out


def jwk(pub, **extra):
    n = pub.public_numbers()
    return dict(kty="EC", crv="P-256", x=b64u(n.x.to_bytes(32, "big")), y=b64u(n.y.to_bytes(32, "big")), **extra)


def jwk_kid(pub):  # RFC 7638 thumbprint of the P-256 key
    j = jwk(pub)
    s = '{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}' % (j["x"], j["y"])
    return b64u(hashlib.sha256(s.encode()).digest())


def low_s(r, s):
    return r, (N - s if s > N // 2 else s)


def es256(key, msg, high=False):
    r, s = low_s(*decode_dss_signature(key.sign(msg, ec.ECDSA(hashes.SHA256()))))
    if high:
        s = N - s
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def spki(pub):
    return pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


# ---- tokens ----
def jws(header, claims, sign):
    h = b64u(json.dumps(header, separators=(",", ":"), sort_keys=True).encode())
    p = b64u(claims if isinstance(claims, bytes) else json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{h}.{p}.{b64u(sign((h + '.' + p).encode()))}"


def tokens(tk, other, secret, ckey):
    kid = jwk_kid(tk.public_key())
    hkid = "hs256-" + hashlib.sha256(b"assent-kid" + secret).hexdigest()[:16]
    put("keys/jwks.json", json.dumps({"keys": [jwk(tk.public_key(), kid=kid, alg="ES256", use="sig")]}, indent=2) + "\n")
    put("keys/jwks-enc.json", json.dumps({"keys": [jwk(tk.public_key(), kid=kid, alg="ES256", use="enc")]}, indent=2) + "\n")
    put("keys/hs256.secret", secret)
    art = put("token/artifact.txt", "terraform plan: 3 to add, 0 to change, 0 to destroy\n")
    digest = hashlib.sha256(open(os.path.join(OUT, art), "rb").read()).hexdigest()
    other_digest = hashlib.sha256(b"another plan\n").hexdigest()
    asserted = hashlib.sha256(b"asserted by the agent\n").hexdigest()
    st = tempfile.mkdtemp(prefix="assent-vectors.")
    try:
        os.makedirs(f"{st}/keys")
        shutil.copy(os.path.join(OUT, "keys/token-es256.key"), f"{st}/keys/token-{kid}.key")
        shutil.copy(os.path.join(OUT, "keys/token-es256.pub"), f"{st}/keys/token-{kid}.pub")
        shutil.copy(os.path.join(OUT, "keys/checkpoint.key"), f"{st}/keys/checkpoint.key")
        os.chmod(f"{st}/keys/token-{kid}.key", 0o600)
        os.chmod(f"{st}/keys/checkpoint.key", 0o600)
        put_abs = lambda p, s: open(p, "w").write(s)
        put_abs(f"{st}/keys/token-keys.json", json.dumps({"active": kid, "keys": [
            {"kid": kid, "created": T0, "retired": None, "verify_until": None}]}))

        def mint(state, *args, env=None):
            out = run([f"{BUILD}/tests/mint", "--state", state, "--aud", AUD, *args], env=env, at="2030-01-01 00:00:00")
            return json.loads(out)

        os.chdir(OUT)  # the subject's name in the token is its path as given: token/artifact.txt
        m = mint(st, "--subject", art, "--asserted", f"plan.json={asserted}", "--session", "req-vec-1",
                 "--now", str(T0), "--ttl", "86400")
        old = mint(st, "--subject", art, "--session", "req-vec-old", "--now", str(T0 - 7200), "--ttl", "900")
        hst = tempfile.mkdtemp(prefix="assent-vectors-hs.")
        henv = dict(os.environ, FEEDBACK_SIGN_TOKENS="true", FEEDBACK_TOKEN_SECRET=secret.decode())
        hm = mint(hst, "--subject", art, "--session", "req-vec-hs", "--now", str(T0), "--ttl", "86400", env=henv)
        shutil.rmtree(hst)
        mint_ledger = read_lmdb(f"{st}/ledger")
        # the kids docs/verification.md defines are the ones the product uses
        assert m["kid"] == kid and hm["kid"] == hkid, (m["kid"], kid, hm["kid"], hkid)
    finally:
        shutil.rmtree(st)
    es_key = dict(key="keys/token-es256.pub")
    base = dict(aud=AUD, now=NOW)

    def t(name, tok, expect, reason, err=None, **args):
        put(f"token/{name}.jwt", tok + "\n")
        a = dict(base)
        a.update(args)
        if "key" not in a and "jwks" not in a and "secret_file" not in a:
            a.update(es_key)
        vec("token", name, expect, reason, file=f"token/{name}.jwt", args=a, **({"verify_err": err} if err else {}))

    tok = m["token"]
    h64, p64, s64 = tok.split(".")
    header = json.loads(b64u_dec(h64))
    claims = json.loads(b64u_dec(p64))
    sign_es = lambda b: es256(tk, b)
    resign = lambda c, hd=header: jws(hd, c, sign_es)
    # valid
    t("es256-valid", tok, "valid", "issued by the gateway (mint); the caller supplies the artifact's digest",
      subject_sha256=[digest])
    t("es256-valid-subject-file", tok, "valid", "the caller supplies the artifact itself (--subject FILE)",
      subject=[art])
    t("es256-valid-jwks", tok, "valid", "the key chosen by kid from a JWKS", jwks="keys/jwks.json",
      subject_sha256=[digest], **{"key": None})
    t("es256-valid-action", tok, "valid", "the action digest the caller computed matches the token's",
      subject_sha256=[digest], action_sha256=m["action_sha256"])
    t("es256-valid-require-computed", tok, "valid", "the caller's digest was computed by the gateway",
      subject_sha256=[digest], require_computed=True)
    t("es256-valid-asserted", tok, "valid", "an asserted digest binds when the caller does not require computed",
      subject_sha256=[asserted])
    t("hs256-valid", hm["token"], "valid", "HS256: HMAC-SHA-256 with the shared secret, kid from the secret",
      secret_file="keys/hs256.secret", subject_sha256=[digest])
    c = dict(claims, aud=["other", AUD])
    t("es256-valid-aud-array", resign(c), "valid", "aud may be an array holding the audience",
      subject_sha256=[digest])
    t("es256-valid-claims-with-blanks", jws(header, json.dumps(claims, indent=2).encode(), sign_es), "valid",
      "claims with blanks and newlines, keys unsorted: a verifier does not depend on the gateway's spelling",
      subject_sha256=[digest])
    t("es256-valid-jku-ignored", resign(claims, dict(header, jku="https://attacker.example/jwks.json",
                                                     x5u="https://attacker.example/cert.pem")), "valid",
      "header members other than alg, kid and crit are ignored: the key comes from the caller, never the token",
      subject_sha256=[digest])
    # invalid: the signature and its key
    tp = b64u(json.dumps(dict(claims, aud="tf-staging"), separators=(",", ":"), sort_keys=True).encode())
    t("tampered-payload", f"{h64}.{tp}.{s64}", "invalid", "payload changed after signing: the signature does not verify",
      "signature does not verify", aud="tf-staging", subject_sha256=[digest])
    sig = bytearray(b64u_dec(s64))
    sig[5] ^= 1
    t("tampered-signature", f"{h64}.{p64}.{b64u(bytes(sig))}", "invalid", "one bit of r flipped",
      "signature does not verify", subject_sha256=[digest])
    rr, ss = int.from_bytes(b64u_dec(s64)[:32], "big"), int.from_bytes(b64u_dec(s64)[32:], "big")
    t("es256-high-s", f"{h64}.{p64}.{b64u(rr.to_bytes(32, 'big') + (N - ss).to_bytes(32, 'big'))}", "invalid",
      "(r, n-s): verifies as ECDSA but is a malleated copy; only s <= n/2 is accepted", "high s",
      subject_sha256=[digest])
    t("es256-s-zero", f"{h64}.{p64}.{b64u(rr.to_bytes(32, 'big') + bytes(32))}", "invalid",
      "s = 0: outside [1, n-1]", "signature does not verify", subject_sha256=[digest])
    der = encode_dss_signature(rr, ss)
    t("es256-der-signature", f"{h64}.{p64}.{b64u(der)}", "invalid", "a DER ECDSA-Sig-Value, not the 64 bytes r || s",
      "64 bytes", subject_sha256=[digest])
    t("wrong-kid", resign(claims, dict(header, kid="not-a-known-kid")), "invalid",
      "kid names no key the caller gave", "unknown kid", subject_sha256=[digest])
    t("other-key", jws(header, claims, lambda b: es256(other, b)), "invalid",
      "signed by another key under the trusted key's kid", "signature does not verify", subject_sha256=[digest])
    t("alg-none", jws(dict(header, alg="none"), claims, lambda b: b""), "invalid",
      "alg none: no signature at all", "no signature", subject_sha256=[digest])
    t("alg-none-with-sig", f"{b64u(json.dumps(dict(header, alg='none'), separators=(',', ':'), sort_keys=True).encode())}.{p64}.{s64}",
      "invalid", "alg none with a signature part: the key's one algorithm is ES256", "algorithm none refused",
      subject_sha256=[digest])
    pem = open(os.path.join(OUT, "keys/token-es256.pub"), "rb").read()
    t("alg-confusion", jws(dict(header, alg="HS256"), claims, lambda b: hmac.new(pem, b, "sha256").digest()),
      "invalid", "HS256 keyed with the ES256 public key's PEM under its kid", "algorithm HS256 refused",
      subject_sha256=[digest])
    t("alg-es384", resign(claims, dict(header, alg="ES384")), "invalid", "an algorithm the key does not allow",
      "algorithm ES384 refused", subject_sha256=[digest])
    t("crit-header", resign(claims, dict(header, crit=["exp"])), "invalid", "a critical header extension",
      "crit", subject_sha256=[digest])
    t("jwks-use-enc", tok, "invalid", "the JWKS key's use is enc, not sig", "may not verify signatures",
      jwks="keys/jwks-enc.json", subject_sha256=[digest], **{"key": None})
    t("hs256-wrong-secret", jws(dict(header, alg="HS256", kid=hm["kid"]), json.loads(b64u_dec(hm["token"].split(".")[1])),
                                lambda b: hmac.new(secret + b"x", b, "sha256").digest()),
      "invalid", "HS256 under the secret's kid, made with another secret", "signature does not verify",
      secret_file="keys/hs256.secret", subject_sha256=[digest])
    hclaims = json.loads(b64u_dec(hm["token"].split(".")[1]))
    t("es256-under-hs256-kid", jws(dict(header, kid=hm["kid"]), hclaims, sign_es), "invalid",
      "ES256 under the kid of the HS256 secret: that key allows HS256 only", "algorithm ES256 refused",
      secret_file="keys/hs256.secret", subject_sha256=[digest])
    t("not-a-jwt", tok.replace(".", "", 1), "invalid", "two parts, not three", "three dot-separated parts")
    # invalid: claims (each re-signed with the real key)
    t("expired", old["token"], "invalid", "exp + leeway is before now (issued 2 hours before NOW for 15 minutes)",
      "expired", subject_sha256=[digest])
    t("not-yet-valid", resign(dict(claims, nbf=NOW + 3600)), "invalid", "nbf is an hour after now",
      "not valid yet", subject_sha256=[digest])
    t("issued-in-future", resign(dict(claims, iat=NOW + 3600)), "invalid", "iat is an hour after now",
      "issued in the future", subject_sha256=[digest])
    for claim in ("exp", "nbf", "iat"):
        c = dict(claims)
        del c[claim]
        t(f"no-{claim}", resign(c), "invalid", f"no {claim}: every time claim is required", "lacks exp, nbf or iat",
          subject_sha256=[digest])
    t("exp-as-string", resign(dict(claims, exp=str(claims["exp"]))), "invalid", "exp must be a JSON integer",
      "lacks exp, nbf or iat", subject_sha256=[digest])
    t("exp-past-9999", resign(dict(claims, exp=253402300800)), "invalid", "exp after the year 9999",
      "year 9999", subject_sha256=[digest])
    t("rejected", resign(dict(claims, approved=False, decision="rejected")), "invalid",
      "a rejected outcome, validly signed", "approved: true", subject_sha256=[digest])
    c = dict(claims)
    del c["approved"]
    t("no-approved", resign(c), "invalid", "approved missing", "approved: true", subject_sha256=[digest])
    t("approved-string", resign(dict(claims, approved="true")), "invalid", "approved must be the JSON literal true",
      "approved: true", subject_sha256=[digest])
    t("decision-rejected", resign(dict(claims, decision="rejected")), "invalid",
      "approved is true but the decision is rejected: a non-approving outcome", "decision",
      subject_sha256=[digest])
    c = dict(claims)
    del c["decision"]
    t("no-decision", resign(c), "invalid", "the decision claim is missing", "decision", subject_sha256=[digest])
    c = dict(claims)
    del c["assurance"]
    t("no-assurance", resign(c), "invalid", "no assurance: the token does not say what vouches for it",
      "no assurance claim", subject_sha256=[digest])
    t("assurance-unknown", resign(dict(claims, assurance="passkey")), "invalid",
      "an assurance this version does not define", "is not reviewer", subject_sha256=[digest])
    t("token-type", resign(dict(claims, token_type="assent/approval/v2")), "invalid",
      "token_type other than assent/approval/v1", "token_type", subject_sha256=[digest])
    t("wrong-audience", tok, "invalid", "the token is for tf-prod, the caller asks for tf-staging",
      "wrong audience", aud="tf-staging", subject_sha256=[digest])
    t("wrong-issuer", tok, "invalid", "the caller requires another issuer", "wrong issuer", iss="someone-else",
      subject_sha256=[digest])
    t("digest-mismatch", tok, "invalid", "the caller's artifact is not among the token's subjects",
      "is not what was approved", subject_sha256=[other_digest])
    t("subject-not-computed", tok, "invalid", "--require-computed, and the caller's digest was only asserted by the agent",
      "asserted by the agent", subject_sha256=[asserted], require_computed=True)
    t("action-mismatch", tok, "invalid", "the caller's action digest differs", "action digest differs",
      subject_sha256=[digest], action_sha256=other_digest)
    dup = json.dumps(claims, separators=(",", ":"), sort_keys=True).replace('"approved":true',
                                                                        '"approved":false,"approved":true', 1)
    t("duplicate-claim", jws(header, dup.encode(), sign_es), "invalid",
      "approved appears twice (false, then true): JSON with duplicate keys is refused", "duplicate keys",
      subject_sha256=[digest])
    sig = b64u_dec(s64)
    last = s64[-1]
    alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    t("signature-nonzero-pad-bits", f"{h64}.{p64}.{s64[:-1]}{alpha[alpha.index(last) ^ 1]}", "invalid",
      "the signature's last base64url character with an unused bit set: the same 64 bytes, spelled twice",
      "not base64url", subject_sha256=[digest])
    lone = json.dumps(dict(claims, reviewer={"name": "alice", "channel": "web"}), separators=(",", ":"),
                      sort_keys=True).replace('"name":"alice"', '"name":"\\ud800alice"', 1)
    t("lone-surrogate", jws(header, lone.encode(), sign_es), "invalid",
      "a claim with the escape \\ud800, a lone surrogate: not a Unicode string (I-JSON, RFC 7493)",
      "not a JSON object", subject_sha256=[digest])
    # with the ledger the token names (the mint's own, with a rejected decision appended)
    ents = list(mint_ledger["entries"])
    dec = ents[claims["ledger"]["seq"]]
    assert b"approved" in dec
    rej = dec.replace(b"approved", b"rejected", 1)
    rej = patch(patch(rej, "seq", bytes([len(ents)]) if len(ents) < 24 else b"\x18" + bytes([len(ents)])),
                "prev", b"\x58\x20" + hashlib.sha256(b"\x00" + ents[-1]).digest())
    ents.append(rej)
    put("ledger/mint.json", json.dumps({"entries": [base64.b64encode(e).decode() for e in ents],
                                        "checkpoints": mint_ledger["checkpoints"]}, indent=1) + "\n")
    led = dict(ledger="ledger/mint.json", subject_sha256=[digest])
    t("es256-valid-ledger", tok, "valid", "the decision entry the token names is on the ledger, approving", **led)
    lg = claims["ledger"]
    t("ledger-leaf-differs", resign(dict(claims, ledger=dict(lg, leaf_hash="00" * 32))), "invalid",
      "the token's leaf_hash is not its entry's", "leaf hash differs", **led)
    t("ledger-other-jti", resign(dict(claims, jti="0" * 32)), "invalid",
      "the decision entry records another token (jti)", "another token", **led)
    t("ledger-other-session", resign(dict(claims, session_id="req-other", sub="req-other")), "invalid",
      "the decision entry decides another session", "another session", **led)
    req_leaf = hashlib.sha256(b"\x00" + ents[lg["seq"] - 1]).hexdigest()
    t("ledger-names-request", resign(dict(claims, ledger={"seq": lg["seq"] - 1, "leaf_hash": req_leaf})), "invalid",
      "the token names the request entry, not a decision", "not a decision", **led)
    t("ledger-names-rejection", resign(dict(claims, ledger={"seq": len(ents) - 1,
                                                            "leaf_hash": hashlib.sha256(b"\x00" + rej).hexdigest()})),
      "invalid", "the token names a decision that rejected (same session and jti)", "does not approve", **led)
    t("ledger-past-end", resign(dict(claims, ledger=dict(lg, seq=len(ents)))), "invalid",
      "the token names an entry past the ledger's end", "no entry", **led)
    plain = json.dumps(claims, separators=(",", ":"), sort_keys=True)
    for name, extra, why in (("nul-in-claim", '"note":"a\\u0000b",', "a string holding U+0000 (\\u0000)"),
                             ("integer-over-64-bits", '"note":18446744073709551616,',
                              "an integer beyond 64 bits in a claim no check reads"),
                             ("number-overflow", '"note":1e400,', "a number too large for a double (1e400)")):
        t(name, jws(header, ("{" + extra + plain[1:]).encode(), sign_es), "invalid", why, "not a JSON object",
          subject_sha256=[digest])
    return digest


# ---- the ledger, its tree and checkpoints (written by the product) ----
ENTRIES = [
    {"kind": "policy_load", "digest": "sha256:" + hashlib.sha256(b"policy").hexdigest(), "source": "policy.conf",
     "rules": 3},
    {"kind": "identity", "event": "reviewer added", "name": "alice", "groups": ["ops"]},
    {"kind": "request", "session_id": "req-1", "type": "approval", "message": "apply plan.tfplan",
     "audience": "tf-prod", "subject": [{"name": "plan.tfplan", "sha256": "ab" * 32, "source": "computed"}]},
    {"kind": "decision", "session_id": "req-1", "outcome": "approved", "assurance": "reviewer",
     "reviewer": {"name": "alice", "channel": "web"}},
    {"kind": "dispatch", "session_id": "req-2", "upstream": "git", "tool": "push", "call": "sha256:" + "cd" * 32},
    {"kind": "outcome", "session_id": "req-2", "status": "ok", "result": {"sha256": "ef" * 32, "size": 120},
     "duration_ms": 35},
    {"kind": "timeout", "session_id": "req-3", "reason": "deadline"},
]


def note_sign(key, body, origin, high=False, der_pad=False, keyid=None):
    r, s = low_s(*decode_dss_signature(key.sign(body, ec.ECDSA(hashes.SHA256()))))
    if high:
        s = N - s
    der = encode_dss_signature(r, s)
    if der_pad:  # r with one needless leading zero byte: BER, not DER
        rb = r.to_bytes((r.bit_length() + 8) // 8, "big")
        ints = b"\x02" + bytes([len(rb) + 1]) + b"\x00" + rb
        sb = s.to_bytes((s.bit_length() + 8) // 8, "big")
        ints += b"\x02" + bytes([len(sb)]) + sb
        der = b"\x30" + bytes([len(ints)]) + ints
    kid = keyid if keyid is not None else hashlib.sha256(spki(key.public_key())).digest()[:4]
    return body + b"\n\xe2\x80\x94 " + origin.encode() + b" " + base64.b64encode(kid + der) + b"\n"


def ledger(ck):
    st = tempfile.mkdtemp(prefix="assent-vectors-ledger.")
    at = "2030-01-01 00:00:00"
    try:
        os.makedirs(f"{st}/keys")
        shutil.copy(os.path.join(OUT, "keys/checkpoint.key"), f"{st}/keys/checkpoint.key")
        shutil.copy(os.path.join(OUT, "keys/checkpoint.pub"), f"{st}/keys/checkpoint.pub")
        os.chmod(f"{st}/keys/checkpoint.key", 0o600)
        lines = lambda es: "".join(json.dumps(e) + "\n" for e in es).encode()
        run([f"{BUILD}/assent", "--state", st, "ledger", "append"], lines(ENTRIES[:5]), at=at)
        run([f"{BUILD}/assent", "--state", st, "ledger", "checkpoint"], at=at)
        run([f"{BUILD}/assent", "--state", st, "ledger", "append"], lines(ENTRIES[5:]), at=at)
        run([f"{BUILD}/assent", "--state", st, "ledger", "checkpoint"], at=at)
        key = ["--key", os.path.join(OUT, "keys/checkpoint.pub")]
        proofs = {}
        for size, idx in [(7, i) for i in range(7)] + [(5, 2), (5, 4)]:
            proofs[(size, idx)] = json.loads(run([f"{BUILD}/assent-verify", "proof", f"{st}/ledger", str(idx),
                                                  "--size", str(size)] + key))
        run([f"{BUILD}/assent-verify", "ledger", f"{st}/ledger"] + key)
    finally:
        shutil.rmtree(st)
    return proofs


def tree_vectors(proofs):
    entries = [base64.b64decode(proofs[(7, i)]["entry"]) for i in range(7)]
    for i, e in enumerate(entries):
        put(f"entry/ledger-{i}.cbor", e)
    leaves = [hashlib.sha256(b"\x00" + e).hexdigest() for e in entries]
    node01 = hashlib.sha256(b"\x01" + bytes.fromhex(leaves[0]) + bytes.fromhex(leaves[1])).hexdigest()
    tree = {"entries": [f"entry/ledger-{i}.cbor" for i in range(7)], "leaf_hashes": leaves,
            "node_hash_0_1": node01,
            "roots": {"5": proofs[(5, 2)]["root"], "7": proofs[(7, 0)]["root"]}}
    put("tree/tree.json", json.dumps(tree, indent=2) + "\n")
    vec("tree", "hashes", "valid", "leaf hashes SHA-256(0x00||entry), the node hash SHA-256(0x01||l||r) of leaves 0 "
        "and 1, and the roots at sizes 5 and 7, as the product computed them", file="tree/tree.json")
    key = "keys/checkpoint.pub"
    for (size, idx), p in sorted(proofs.items()):
        f = put(f"tree/proof-{size}-{idx}.json", json.dumps(p, indent=1) + "\n")
        vec("tree", f"proof-{size}-{idx}", "valid", f"inclusion of entry {idx} in the tree of size {size} (assent-verify proof)",
            file=f, args={"key": key})
    base = proofs[(7, 3)]

    def bad(name, p, reason, err):
        f = put(f"tree/{name}.json", json.dumps(p, indent=1) + "\n")
        vec("tree", name, "invalid", reason, file=f, args={"key": key}, verify_err=err)

    p = json.loads(json.dumps(base))
    p["path"][1] = p["path"][1][:-1] + ("0" if p["path"][1][-1] != "0" else "1")
    bad("path-hash-changed", p, "one hash of the audit path changed", "does not lead")
    p = json.loads(json.dumps(base))
    p["path"].pop()
    bad("path-too-short", p, "the audit path lacks its last hash", "does not lead")
    p = json.loads(json.dumps(base))
    p["path"].append(p["path"][0])
    bad("path-too-long", p, "one hash too many on the audit path", "does not lead")
    p = json.loads(json.dumps(base))
    p["path"][0], p["path"][1] = p["path"][1], p["path"][0]
    bad("path-swapped", p, "the audit path's first two hashes swapped", "does not lead")
    p = json.loads(json.dumps(proofs[(7, 4)]))
    p["path"] = base["path"]
    bad("path-of-another-leaf", p, "entry 4 with the audit path of entry 3", "does not lead")
    p = json.loads(json.dumps(base))
    p["index"] = 2
    bad("index-changed", p, "index 2 for the entry whose seq is 3", "malformed")
    p = json.loads(json.dumps(base))
    p["leaf_hash"] = proofs[(7, 2)]["leaf_hash"]
    bad("leaf-hash-of-another-entry", p, "leaf_hash is not SHA-256(0x00 || entry)", "does not hash to leaf_hash")
    p = json.loads(json.dumps(base))
    p["root"] = proofs[(5, 2)]["root"]
    bad("root-not-checkpoints", p, "root differs from the signed checkpoint's", "root differs")
    p = json.loads(json.dumps(base))
    p["tree_size"] = 6
    bad("size-not-checkpoints", p, "tree_size 6 with a checkpoint of size 7", "tree size or root differs")
    p = json.loads(json.dumps(base))
    p["leaf_hash"] = p["leaf_hash"].upper()
    bad("hex-uppercase", p, "hashes are lowercase hex", "malformed")
    p = json.loads(json.dumps(base))
    p["extra"] = 1
    bad("extra-field", p, "a proof has exactly its eight fields", "exactly the fields")
    p = json.loads(json.dumps(base))
    p["checkpoint"] = None
    bad("no-checkpoint", p, "no signed checkpoint to hold the root", "carries no checkpoint")
    # the proof the checkpoint vectors are checked with: no checkpoint of its own
    p = json.loads(json.dumps(proofs[(7, 0)]))
    p["checkpoint"] = None
    put("tree/proof-7-0-bare.json", json.dumps(p, indent=1) + "\n")


def entry_vectors(ck, origin):
    """Entry vectors: the CBOR file itself, and for assent-verify the same bytes in a proof of
    a one-entry tree under a checkpoint signed here (so only the entry can be at fault)."""
    e0 = open(os.path.join(OUT, "entry/ledger-0.cbor"), "rb").read()
    key = "keys/checkpoint.pub"

    def wrap(name, data, expect, reason, err=None):
        f = put(f"entry/{name}.cbor", data)
        leaf = hashlib.sha256(b"\x00" + data).digest()
        body = f"{origin}\n1\n{base64.b64encode(leaf).decode()}\n".encode()
        p = {"origin": origin, "index": 0, "tree_size": 1, "leaf_hash": leaf.hex(),
             "entry": base64.b64encode(data).decode(), "path": [], "root": leaf.hex(),
             "checkpoint": note_sign(ck, body, origin).decode()}
        pf = put(f"entry/{name}.proof", json.dumps(p, indent=1) + "\n")
        vec("entry", name, expect, reason, file=f, args={"proof": pf, "key": key, "seq": 0},
            **({"verify_err": err} if err else {}))

    for i in range(7):
        vec("entry", f"ledger-{i}", "valid", f"entry {i} of the ledger `assent ledger append` wrote",
            file=f"entry/ledger-{i}.cbor", args={"proof": f"tree/proof-7-{i}.json", "key": key, "seq": i})
    # e0 is a map of 7 pairs: v, seq, kind, prev, time, rules, digest, source (sorted by encoding)
    assert e0[0] == 0xa8, hex(e0[0])
    wrap("entry-0-in-own-tree", e0, "valid", "entry 0 alone, a tree of size 1 whose root is its leaf hash")
    assert e0[1:4] == b"\x61\x76\x01"  # "v": 1
    wrap("nonshortest-uint", e0[:3] + b"\x18\x01" + e0[4:], "invalid", "v: 1 written as 0x18 0x01", "shortest form")
    wrap("nonshortest-uint16", e0[:3] + b"\x19\x00\x01" + e0[4:], "invalid", "v: 1 written in two bytes", "shortest form")
    wrap("nonshortest-map-len", b"\xb8\x08" + e0[1:], "invalid", "the map's length 8 written as 0xb8 0x08",
         "shortest form")
    wrap("nonshortest-text-len", e0[:1] + b"\x78\x01v" + e0[3:], "invalid", "the key \"v\" with a one-byte length argument",
         "shortest form")
    # pairs: find the byte spans of each key/value to reorder them
    spans = split_map(e0)
    swapped = e0[:1] + b"".join(e0[a:b] for a, b in [spans[1], spans[0]] + spans[2:])
    wrap("unsorted-keys", swapped, "invalid", "the pairs \"v\" and \"seq\" swapped", "canonical order")
    dup = b"\xa9" + e0[1:spans[0][1]] + e0[spans[0][0]:]
    wrap("duplicate-key", dup, "invalid", "the pair \"v\": 1 twice", "duplicate map key")
    wrap("trailing-bytes", e0 + b"\x00", "invalid", "one byte after the map", "trailing bytes")
    wrap("truncated", e0[:-1], "invalid", "the last byte missing", "truncated|exceeds the input")
    wrap("indefinite-map", b"\xbf" + e0[1:] + b"\xff", "invalid", "an indefinite-length map", "indefinite")
    wrap("tag", b"\xd9\xd9\xf7" + e0, "invalid", "the self-described CBOR tag 55799 around the map", "tags")
    ka, kb = spans[4]  # "time": uint -> float
    assert e0[ka:ka + 5] == b"\x64time", e0[ka:ka + 5]
    wrap("float-time", e0[:ka + 5] + b"\xfb" + struct.pack(">d", 1893456000000.0) + e0[kb:],
         "invalid", "time as a float64", "floating point")
    wrap("undefined", e0[:3] + b"\xf7" + e0[4:], "invalid", "v: undefined (simple value 23)", "simple value")
    wrap("bad-utf8", e0[:1] + b"\x61\xff" + e0[3:], "invalid", "a key that is not UTF-8", "UTF-8")
    wrap("uint-key", b"\xa9\x00\x00" + e0[1:], "invalid",
         "an extra pair 0: 0 (a key that is not text; it sorts first)", "not text")
    wrap("v-2", e0[:3] + b"\x02" + e0[4:], "invalid", "v must be 1", "'v' must be 1")
    sa, sb = spans[1]  # "seq": 0 -> 1
    assert e0[sa:sb] == b"\x63seq\x00"
    wrap("seq-1-at-0", e0[:sb - 1] + b"\x01" + e0[sb:], "invalid", "seq 1 stored at index 0", "says seq 1")
    pa, pb = spans[3]
    assert e0[pa:pa + 5] == b"\x64prev"
    wrap("prev-31-bytes", b"\xa8" + e0[1:pa + 5] + b"\x58\x1f" + e0[pa + 7:pb - 1] + e0[pb:], "invalid",
         "prev of 31 bytes", "'prev' must be 32 bytes")
    ma, mb = spans[2]
    assert e0[ma:ma + 5] == b"\x64kind"
    wrap("unknown-kind", e0[:ma + 5] + b"\x6bpolicy_lost" + e0[mb:], "invalid", "a kind this version does not define",
         "unknown kind")
    ra, rb = spans[6]
    assert e0[ra:ra + 7] == b"\x66digest", e0[ra:ra + 7]
    wrap("missing-field", b"\xa7" + e0[1:ra] + e0[rb:], "invalid", "a policy_load without its digest",
         "requires field 'digest'")
    wrap("not-a-map", b"\x80", "invalid", "an empty array, not a map", "not a CBOR map")
    # an extra field "x" (0x61 0x78 sorts after "v", before "seq"): nested arrays, depth 31 and 32
    va, vb = spans[0]
    nest = lambda k: b"\x81" * (k - 1) + b"\x80"
    wrap("nesting-31", b"\xa9" + e0[1:vb] + b"\x61x" + nest(31) + e0[vb:], "valid",
         "a field of 31 nested arrays: the deepest is at depth 31 (the entry map is 0)")
    wrap("nesting-32", b"\xa9" + e0[1:vb] + b"\x61x" + nest(32) + e0[vb:], "invalid",
         "a field of 32 nested arrays: deeper than 32 levels", "deeper than 32")
    wrap("big-and-negative", b"\xaa" + e0[1:vb] + b"\x61w\x3b" + b"\xff" * 8 + b"\x61x\x1b" + b"\xff" * 8 + e0[vb:],
         "valid", "fields w: -2^64 and x: 2^64-1, the extremes of CBOR's integers")
    wrap("text-surrogate", b"\xa9" + e0[1:vb] + b"\x61x\x63\xed\xa0\x80" + e0[vb:], "invalid",
         "a text string holding the UTF-8 form of the surrogate U+D800", "UTF-8")
    wrap("text-overlong", b"\xa9" + e0[1:vb] + b"\x61x\x62\xc0\xaf" + e0[vb:], "invalid",
         "a text string with the overlong form of '/'", "UTF-8")
    wrap("seq-negative", e0[:sa + 4] + b"\x20" + e0[sb:], "invalid", "seq as the negative integer -1",
         "'seq'")


def split_map(e):
    """Byte spans of the pairs of a definite map of text keys and simple values (our own entries)."""
    off, spans = 1, []

    def item(o):
        ib = e[o]
        mj, mi = ib >> 5, ib & 31
        o += 1
        if mi < 24:
            arg = mi
        else:
            nb = 1 << (mi - 24)
            arg = int.from_bytes(e[o:o + nb], "big")
            o += nb
        if mj in (2, 3):
            return o + arg
        if mj == 4:
            for _ in range(arg):
                o = item(o)
            return o
        if mj == 5:
            for _ in range(2 * arg):
                o = item(o)
            return o
        return o

    for _ in range(e[0] & 31):
        a = off
        off = item(item(off))
        spans.append((a, off))
    return spans


def checkpoint_vectors(ck, other, proofs):
    p7 = proofs[(7, 0)]
    note = p7["checkpoint"].encode()
    origin = p7["origin"]
    body = note[:note.index(b"\n\n") + 1]
    key = "keys/checkpoint.pub"

    def c(name, data, expect, reason, err=None):
        f = put(f"checkpoint/{name}.note", data)
        vec("checkpoint", name, expect, reason, file=f, args={"proof": "tree/proof-7-0-bare.json", "key": key},
            **({"verify_err": err} if err else {}))

    c("valid", note, "valid", "the checkpoint `assent ledger checkpoint` signed at size 7")
    c("valid-python-signed", note_sign(ck, body, origin), "valid", "the same body signed by this script (low s)")
    c("witness-line", note + b"\xe2\x80\x94 witness.example/w1 " + base64.b64encode(b"\x01\x02\x03\x04" + b"\x00" * 64) + b"\n",
      "valid", "an extra signature line by a key the verifier does not know is ignored")
    c("high-s", note_sign(ck, body, origin, high=True), "valid",
      "(r, n-s): assent writes low s, but a checkpoint's signature is not its identity and assent-verify accepts "
      "either (a verifier may accept both)")
    c("ber-signature", note_sign(ck, body, origin, der_pad=True), "invalid",
      "the ECDSA signature with a needless leading zero in r: BER, not DER", "not DER")
    sig_line = note[len(body) + 1:]
    blob = bytearray(base64.b64decode(sig_line.split(b" ")[2]))
    b2 = bytearray(blob)
    b2[-1] ^= 1
    c("bad-signature", body + b"\n" + sig_line.split(b" ")[0] + b" " + sig_line.split(b" ")[1] + b" " +
      base64.b64encode(bytes(b2)) + b"\n", "invalid", "the last byte of the signature changed", "does not verify")
    c("other-key", note_sign(other, body, origin), "invalid", "signed by another key: no trusted signature",
      "not signed by a trusted key")
    b3 = bytearray(blob)
    b3[0] ^= 0xff
    c("wrong-key-id", body + b"\n" + sig_line.split(b" ")[0] + b" " + sig_line.split(b" ")[1] + b" " +
      base64.b64encode(bytes(b3)) + b"\n", "invalid", "the key id (first 4 bytes) changed: no trusted signature",
      "not signed by a trusted key")
    c("other-name", note_sign(ck, body, "assent-demo/other"), "invalid",
      "the trusted key's signature line names another key name than the origin", "under another name")
    c("root-changed", note_sign(ck, body.replace(body.split(b"\n")[2], base64.b64encode(bytes(32))), origin),
      "invalid", "a validly signed checkpoint of another root", "root differs")
    c("size-changed", note_sign(ck, body.replace(b"\n7\n", b"\n8\n"), origin), "invalid",
      "a validly signed checkpoint of another size", "size")
    lines = body.split(b"\n")
    c("origin-trailing-space", note_sign(ck, lines[0] + b" \n" + b"\n".join(lines[1:]), origin), "invalid",
      "a space after the origin", "line 1")
    c("size-leading-zero", note_sign(ck, body.replace(b"\n7\n", b"\n07\n"), origin), "invalid",
      "tree size 07: one spelling per number", "line 2")
    c("size-plus", note_sign(ck, body.replace(b"\n7\n", b"\n+7\n"), origin), "invalid", "tree size +7", "line 2")
    c("extra-blank-line", note.replace(b"\n\n", b"\n\n\n", 1), "invalid", "two blank lines after the body",
      "em dash")
    c("crlf", note.replace(b"\n", b"\r\n"), "invalid", "CR LF line ends", "control character")
    c("no-final-newline", note[:-1], "invalid", "the signature line without its newline", "final newline")
    c("no-blank-line", body + sig_line, "invalid", "no blank line between body and signature", "blank line")
    c("no-signature", body + b"\n", "invalid", "no signature line", "no signature line")
    root64 = lines[2]
    c("root-unpadded", note_sign(ck, body.replace(root64, root64.rstrip(b"=")), origin), "invalid",
      "the root in base64 without its padding", "line 3")
    c("root-base64url", note_sign(ck, body.replace(root64, root64.replace(b"+", b"-").replace(b"/", b"_")), origin)
      if (b"+" in root64 or b"/" in root64) else note_sign(ck, body.replace(root64, root64[:-2] + b"!="), origin),
      "invalid", "the root in base64url (or with a character outside base64)", "line 3")
    nz = bytearray(root64)
    # the last character before '=' carries 2 unused bits: set one (non-canonical base64)
    alpha = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    v = alpha.index(nz[42])
    nz[42] = alpha[v ^ 1] if v & 3 == 0 else alpha[v & ~3]
    c("root-nonzero-pad-bits", note_sign(ck, body.replace(root64, bytes(nz)), origin), "invalid",
      "the root's base64 with a non-zero unused bit (two spellings of one root)", "line 3")
    c("two-signatures", note + note_sign(ck, body, origin)[len(body) + 1:], "valid",
      "two signature lines by the trusted key, both valid")
    c("bad-second-signature", note + (body + b"\n" + sig_line.split(b" ")[0] + b" " + sig_line.split(b" ")[1] + b" " +
                                      base64.b64encode(bytes(b2)) + b"\n")[len(body) + 1:], "invalid",
      "a valid signature line, then one by the same key that does not verify", "does not verify")
    c("witness-bad-base64", note + b"\xe2\x80\x94 witness.example/w1 !!!!\n", "invalid",
      "a line by another key whose signature is not base64", "malformed")
    c("101-lines", note + (b"\xe2\x80\x94 w.example/w " + base64.b64encode(b"\x01\x02\x03\x04\x00") + b"\n") * 100,
      "invalid", "101 signature lines", "more than 100")
    c("root-31-bytes", note_sign(ck, body.replace(root64, base64.b64encode(base64.b64decode(root64)[:31])), origin),
      "invalid", "a root of 31 bytes", "line 3")


# ---- whole ledgers: entries and checkpoints, as a JSON file ----
def patch(e, key, new):
    """Entry e with the value of text key `key` (a uint of fixed width, or prev) replaced by new bytes."""
    enc = bytes([0x60 + len(key)]) + key.encode()
    i = e.index(enc) + len(enc)
    width = {"prev": 34, "time": 9, "seq": 1}[key]
    return e[:i] + new + e[i + width:]


def rechain(entries):
    out, prev = [], bytes(32)
    for i, e in enumerate(entries):
        e = patch(patch(e, "seq", bytes([i])), "prev", b"\x58\x20" + prev)
        out.append(e)
        prev = hashlib.sha256(b"\x00" + e).digest()
    return out


def root_of(entries):
    def mth(ls):
        if len(ls) == 1:
            return ls[0]
        k = 1
        while k * 2 < len(ls):
            k *= 2
        return hashlib.sha256(b"\x01" + mth(ls[:k]) + mth(ls[k:])).digest()
    return mth([hashlib.sha256(b"\x00" + e).digest() for e in entries])


def ckpt_for(key, origin, entries, size, root=None):
    root = root or root_of(entries[:size])
    return note_sign(key, f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n".encode(), origin).decode()


def ledger_vectors(ck, other, proofs):
    origin = proofs[(7, 0)]["origin"]
    entries = [base64.b64decode(proofs[(7, i)]["entry"]) for i in range(7)]
    ck5, ck7 = proofs[(5, 2)]["checkpoint"], proofs[(7, 0)]["checkpoint"]
    key = "keys/checkpoint.pub"

    def lv(name, es, cks, expect, reason, err=None):
        f = put(f"ledger/{name}.json", json.dumps({"entries": [base64.b64encode(e).decode() for e in es],
                                                  "checkpoints": cks}, indent=1) + "\n")
        vec("ledger", name, expect, reason, file=f, args={"key": key}, **({"verify_err": err} if err else {}))

    lv("valid", entries, [ck5, ck7], "valid", "the ledger `assent ledger append` wrote, with its checkpoints at 5 and 7")
    lv("valid-head-only", entries, [ck7], "valid", "one checkpoint, covering the head")
    lv("valid-resigned", entries, [ckpt_for(ck, origin, entries, 5), ckpt_for(ck, origin, entries, 7)], "valid",
       "the same entries with checkpoints signed by this script")
    e = list(entries)
    i = e[3].index(b"alice")
    e[3] = e[3][:i] + b"alicf" + e[3][i + 5:]
    lv("entry-changed", e, [ck5, ck7], "invalid", "entry 3's reviewer changed: entry 4's prev no longer matches",
       "entry 3 was altered")
    lv("entry-deleted", entries[:3] + entries[4:], [ck5, ck7], "invalid", "entry 3 removed", "entry 3")
    r = rechain(e)
    lv("rewritten-rechained", r, [ck5, ck7], "invalid",
       "entry 3 changed and the chain recomputed: the signed roots at 5 and 7 differ", "rewritten")
    lv("rewritten-other-key", r, [ckpt_for(other, origin, r, 5), ckpt_for(other, origin, r, 7)], "invalid",
       "a rewritten history re-signed with another key", "not signed by a trusted key")
    t = list(entries)
    t[4] = patch(t[4], "time", b"\x1b" + (1893455999000).to_bytes(8, "big"))
    t = rechain(t)
    lv("time-backwards", t, [ckpt_for(ck, origin, t, 5), ckpt_for(ck, origin, t, 7)], "invalid",
       "entry 4's time is a second before entry 3's (chain and checkpoints recomputed with the key)",
       "never go backwards")
    z = list(entries)
    z[0] = patch(z[0], "prev", b"\x58\x20" + b"\x01" * 32)
    z = z[:1] + rechain_from(z[0], z[1:])
    lv("first-prev-not-zero", z, [ckpt_for(ck, origin, z, 5), ckpt_for(ck, origin, z, 7)], "invalid",
       "entry 0's prev is not 32 zero bytes (everything else recomputed with the key)", "prev is not 32 zero bytes")
    s5 = rechain(entries[:3] + entries[4:])
    s5[3] = patch(s5[3], "seq", b"\x04")
    s5 = s5[:4] + rechain_from(s5[3], s5[4:])
    lv("seq-skips", s5, [ckpt_for(ck, origin, s5, 6)], "invalid",
       "the fourth entry says seq 4 (entry 3 removed, the chain and checkpoint recomputed with the key)",
       "says seq 4")
    lv("unsigned-tail", entries, [ck5], "invalid", "entries 5 and 6 come after the newest checkpoint", "unsigned tail")
    lv("no-checkpoint", entries, [], "invalid", "no checkpoint at all: every entry is an unsigned tail", "unsigned tail")
    lv("truncated", entries[:6], [ck5, ck7], "invalid", "the last entry removed: a checkpoint covers 7",
       "truncated")
    lv("checkpoint-wrong-root", entries, [ck5, ckpt_for(ck, origin, entries, 7, root=root_of(entries[:6]))],
       "invalid", "a checkpoint signed with the key, at size 7, of the root at size 6", "differs")


def rechain_from(prev_entry, rest):
    out, prev = [], hashlib.sha256(b"\x00" + prev_entry).digest()
    for e in rest:
        e = patch(e, "prev", b"\x58\x20" + prev)
        out.append(e)
        prev = hashlib.sha256(b"\x00" + e).digest()
    return out


# ---- witnesses' cosignatures (C2SP tlog-cosignature cosignature/v1, Ed25519) ----
EMDASH = "\u2014".encode()
COSIG_T = T0 + 60  # the witnesses' timestamp: fixed, so the cosignatures are the same every run


def load_or_make_witness(name):
    """A witness's Ed25519 key (the raw 32-byte seed in hex, test-only and committed) and its vkey."""
    p = os.path.join(OUT, "keys", name + ".ed25519")
    if not os.path.exists(p):
        put(f"keys/{name}.ed25519", os.urandom(32).hex().encode() + b"\n")
    k = ed25519.Ed25519PrivateKey.from_private_bytes(bytes.fromhex(open(p).read().strip()))
    pub = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    wname = f"witness.example/{name}"
    kid = hashlib.sha256(wname.encode() + b"\n\x04" + pub).digest()[:4]
    vkey = wname + "+" + kid.hex() + "+" + base64.b64encode(b"\x04" + pub).decode()
    put(f"keys/{name}.vkey", vkey.encode() + b"\n")
    return k, wname, kid, pub, vkey


def cosign(w, body, t=COSIG_T, kid=None, sign_t=None, sign_body=None):
    """A cosignature line: "— NAME base64(keyid || u64 time || Ed25519 sig)"; sign_t and sign_body
    sign something other than what the line claims."""
    k, wname, wkid, _, _ = w
    msg = b"cosignature/v1\ntime %d\n" % (t if sign_t is None else sign_t) + (sign_body or body)
    blob = (kid or wkid) + struct.pack(">Q", t) + k.sign(msg)
    return EMDASH + b" " + wname.encode() + b" " + base64.b64encode(blob) + b"\n"


def cosig_vectors(proofs):
    note = proofs[(7, 0)]["checkpoint"].encode()  # signed by the log (keys/checkpoint.key)
    body = note[:note.index(b"\n\n") + 1]
    w1, w2, w3 = (load_or_make_witness(n) for n in ("w1", "w2", "w3"))
    key = "keys/checkpoint.pub"

    def c(name, data, expect, reason, witnesses=("w1",), threshold=1, err=None):
        f = put(f"cosig/{name}.note", data)
        vec("cosig", name, expect, reason, file=f, args={"key": key, "threshold": threshold,
                                                          "witnesses": [f"keys/{w}.vkey" for w in witnesses]},
            **({"verify_err": err} if err else {}))

    c("one-of-one", note + cosign(w1, body), "valid", "witness w1 cosigned the checkpoint the log signed")
    c("two-of-two", note + cosign(w1, body) + cosign(w2, body), "valid", "both witnesses cosigned",
      ("w1", "w2"), 2)
    c("unknown-witness-ignored", note + cosign(w3, body) + cosign(w1, body), "valid",
      "a cosignature by a witness not given (w3) is ignored")
    c("time-zero", note + cosign(w1, body, t=0), "valid", "timestamp 0 is spelled 'time 0'")
    c("time-max", note + cosign(w1, body, t=2 ** 63 - 1), "valid", "timestamp 2^63 - 1, the largest C2SP allows")
    c("none", note, "invalid", "no cosignature: 0 of 1", err="fewer than 1")
    c("below-threshold", note + cosign(w1, body), "invalid", "1 of the 2 required", ("w1", "w2"), 2,
      err="fewer than 2")
    c("duplicate-counted-once", note + cosign(w1, body) + cosign(w1, body, t=COSIG_T + 1), "invalid",
      "w1 twice (two valid lines) is one witness, not two", ("w1", "w2"), 2, err="cosigned by 1 of the 2")
    c("wrong-key-id", note + cosign(w1, body, kid=b"\x00\x00\x00\x00"), "invalid",
      "w1's name with another key ID: not w1's line, so ignored, and no cosignature is left", err="fewer than 1")
    bad = bytearray(cosign(w1, body))
    blob = bytearray(base64.b64decode(bad.split(b" ")[2]))
    blob[20] ^= 1
    c("bad-signature", note + EMDASH + b" " + w1[1].encode() + b" " + base64.b64encode(bytes(blob)) + b"\n",
      "invalid", "one bit of w1's signature flipped: a forgery, refused naming w1",
      err="witness witness.example/w1 .*does not verify")
    line = cosign(w1, body)
    short = base64.b64decode(line.split(b" ")[2])[:75]
    c("truncated", note + EMDASH + b" " + w1[1].encode() + b" " + base64.b64encode(short) + b"\n", "invalid",
      "w1's cosignature one byte short (75 bytes)", err="is 75 bytes, not 76")
    c("timestamp-changed", note + cosign(w1, body, sign_t=COSIG_T + 1), "invalid",
      "the line's timestamp differs from the one signed", err="does not verify")
    other = body.replace(body.split(b"\n")[2], base64.b64encode(hashlib.sha256(b"other").digest()))
    c("body-changed", note + cosign(w1, body, sign_body=other), "invalid",
      "w1 cosigned another root at the same size (a fork)", err="does not verify")
    c("time-over-max", note + cosign(w1, body, t=2 ** 63), "invalid", "timestamp 2^63, over 2^63 - 1",
      err="over 2\\^63")
    c("forged-among-valid", note + cosign(w2, body) + cosign(w1, body, sign_t=1), "invalid",
      "w2 cosigned but w1's line does not verify: a forgery fails the check whatever the count",
      ("w1", "w2"), 1, err="witness.example/w1")

    def k(name, vkey, expect, reason, err=None):
        f = put(f"cosig/vkey-{name}.txt", vkey.encode() + b"\n")
        vec("vkey", name, expect, reason, file=f, args={"key": key, "note": "cosig/one-of-one.note"},
            **({"verify_err": err} if err else {}))

    _, wname, kid, pub, vkey = w1
    b64 = lambda b: base64.b64encode(b).decode()
    k4 = b64(b"\x04" + pub)
    kid1 = hashlib.sha256(wname.encode() + b"\n\x01" + pub).digest()[:4].hex()
    k("valid", vkey, "valid", "NAME+KEYIDHEX+base64(0x04 || Ed25519 key)")
    k("wrong-type", f"{wname}+{kid1}+" + b64(b"\x01" + pub), "invalid",
      "key type 0x01 (Ed25519 note signatures), not 0x04", err="key type 0x01")
    k("wrong-key-id", f"{wname}+00000000+{k4}", "invalid", "the key ID is not the key's", err="does not match")
    k("uppercase-key-id", f"{wname}+{kid.hex().upper()}+{k4}", "invalid", "the key ID in uppercase hex",
      err="lowercase hex")
    k("short-key", f"{wname}+{kid.hex()}+" + b64(b"\x04" + pub[:31]), "invalid", "a 31-byte key", err="33 bytes")
    k("name-with-space", f"witness example+{kid.hex()}+{k4}", "invalid", "a space in the name",
      err="printable ASCII")
    k("no-key", f"{wname}+{kid.hex()}", "invalid", "no key after the key ID", err="not 8 lowercase hex|33 bytes")


def main():
    global OUT
    if len(sys.argv) == 3 and sys.argv[1] == "--out":  # a fresh copy elsewhere, with these keys
        OUT = os.path.abspath(sys.argv[2])
        shutil.copytree(os.path.join(HERE, "keys"), os.path.join(OUT, "keys"), dirs_exist_ok=True)
    elif len(sys.argv) != 1:
        sys.exit("usage: gen.py [--out DIR]")
    for b in ("assent", "assent-verify", "tests/mint"):
        if not os.access(f"{BUILD}/{b}", os.X_OK):
            sys.exit(f"gen: build/{b} is missing: make all build/tests/mint")
    tk = load_or_make_key("token-es256")
    other = load_or_make_key("other")
    ck = load_or_make_key("checkpoint")
    sp = os.path.join(OUT, "keys/hs256.secret")
    secret = open(sp, "rb").read() if os.path.exists(sp) else os.urandom(24).hex().encode()
    for d in ("token", "entry", "tree", "checkpoint", "ledger", "cosig"):
        shutil.rmtree(os.path.join(OUT, d), ignore_errors=True)
    tokens(tk, other, secret, ck)
    proofs = ledger(ck)
    tree_vectors(proofs)
    entry_vectors(ck, proofs[(7, 0)]["origin"])
    checkpoint_vectors(ck, other, proofs)
    ledger_vectors(ck, other, proofs)
    cosig_vectors(proofs)
    for v in manifest:  # None marks an option a vector takes away from the defaults
        if "args" in v:
            v["args"] = {k: x for k, x in v["args"].items() if x is not None}
    doc = {"comment": "Verification vectors of docs/verification.md, made by gen.py. expect: valid or invalid; "
                      "reason: why; verify_err: what assent-verify's one-line reason contains. Token vectors are "
                      "checked as of args.now (unix seconds).",
           "now": NOW, "vectors": manifest}
    put("manifest.json", json.dumps(doc, indent=1) + "\n")
    counts = {}
    for v in manifest:
        counts.setdefault(v["object"], [0, 0])[v["expect"] == "invalid"] += 1
    print("gen: " + ", ".join(f"{o}: {a} valid, {b} invalid" for o, (a, b) in counts.items()))


if __name__ == "__main__":
    main()
