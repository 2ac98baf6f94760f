"""Passkey decisions in the ledger, checked offline by `assent-verify ledger` (issue 31).

Each case writes a demo ledger with `assent ledger append`: a reviewer's passkey enrolled
(a `passkey` entry), a request whose terms require passkeys, and its decision carrying a
WebAuthn assertion made here with Python's `cryptography` (a P-256 key standing in for the
authenticator). The challenge is rebuilt here from docs/verification.md with this file's own
canonical CBOR encoder; nothing is shared with the product. The good ledger verifies; each
forgery fails with a line naming the request.

usage: passkey_ledger.py BUILD_DIR TMP_DIR"""
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(__file__))
from taplib import ok, plan, done  # noqa: E402

BUILD, TMP = sys.argv[1], sys.argv[2]
RP_ID, ORIGIN = "review.example", "https://review.example"


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for ai, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | ai]) + struct.pack(fmt, n)


def cbor(v):  # RFC 8949 section 4.2.1: shortest heads, map keys sorted by their encoding
    if isinstance(v, int):
        return head(0, v)
    if isinstance(v, str):
        return head(3, len(v.encode())) + v.encode()
    pairs = sorted((cbor(k), cbor(x)) for k, x in v.items())
    return head(5, len(pairs)) + b"".join(k + x for k, x in pairs)


class Authenticator:
    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.id = os.urandom(16)
        self.count = 0

    def point(self):
        return self.key.public_key().public_bytes(serialization.Encoding.X962,
                                                  serialization.PublicFormat.UncompressedPoint)

    def assert_(self, challenge, origin=ORIGIN, rp_id=RP_ID, flags=0x05, count=None):
        self.count = self.count + 1 if count is None else count
        ad = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", self.count)
        cdj = json.dumps({"type": "webauthn.get", "challenge": b64u(challenge), "origin": origin,
                          "crossOrigin": False}, separators=(",", ":")).encode()
        sig = self.key.sign(ad + hashlib.sha256(cdj).digest(), ec.ECDSA(hashes.SHA256()))
        return {"credential_id": b64u(self.id), "authenticator_data": b64u(ad),
                "client_data_json": b64u(cdj), "signature": b64u(sig)}


def enrol(name, a, origin=ORIGIN):
    return {"kind": "passkey", "event": "enrolled", "reviewer": name, "credential_id": b64u(a.id),
            "public_key": b64u(a.point()), "rp_id": RP_ID, "origin": origin}


ACTION = "sha256:" + "ab" * 32


def request(sid, action=ACTION, deadline=1767225600000):
    return {"kind": "request", "session_id": sid, "type": "approval", "message": "drop the table",
            "action": action, "deadline": deadline, "terms": {"assurance": "passkey", "quorum": 1}}


def challenge(origin, sid, outcome, response, reviewer, action=ACTION, deadline=1767225600000):
    return hashlib.sha256(cbor({"origin": origin, "session_id": sid, "action": action, "outcome": outcome,
                                "response": hashlib.sha256(response.encode()).hexdigest(),
                                "scope": "request", "reviewer": reviewer, "deadline": deadline, "v": 1})).digest()


def decision(sid, who, outcome, response, passkey, kind="decision"):
    e = {"kind": kind, "session_id": sid, "reviewer": {"name": who, "channel": "web", "via": "session"},
         "response_digest": hashlib.sha256(response.encode()).hexdigest()}
    if kind == "decision":
        e.update({"outcome": outcome, "response": response, "action": ACTION})
    else:
        e.update({"n": 1, "quorum": 2})
    if passkey is not None:
        e["passkey"] = passkey
    return e


def ledger(name, build, extra=()):
    """A demo ledger in TMP/name: its first entry makes the key; build(origin) gives the rest."""
    state = os.path.join(TMP, name)
    assent = os.path.join(BUILD, "assent")
    first = json.dumps({"kind": "policy_load", "digest": "sha256:" + "00" * 32, "source": "test"})
    subprocess.run([assent, "--state", state, "ledger", "append"], input=first + "\n", text=True, check=True,
                   capture_output=True)
    der = serialization.load_pem_public_key(open(os.path.join(state, "keys", "checkpoint.pub"), "rb").read()) \
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    origin = "assent-demo/" + hashlib.sha256(der).digest()[:4].hex()
    lines = "".join(json.dumps(e) + "\n" for e in build(origin))
    subprocess.run([assent, "--state", state, "ledger", "append"], input=lines, text=True, check=True,
                   capture_output=True)
    r = subprocess.run([os.path.join(BUILD, "assent-verify"), "ledger", os.path.join(state, "ledger"),
                        "--key-from-state", *extra], text=True, capture_output=True)
    return r.returncode, r.stdout + r.stderr


alice, bob = Authenticator(), Authenticator()


def good(origin):
    return [enrol("alice", alice), enrol("bob", bob), request("s1"),
            decision("s1", "alice", "approved", "go", alice.assert_(challenge(origin, "s1", "approved", "go", "alice")))]


rc, out = ledger("good", good)
ok(rc == 0, f"a passkey decision with its assertion verifies ({out.strip()[:200]})")


def refused(name, build, want):
    rc, out = ledger(name, build)
    ok(rc != 0 and want in out and "s1" in out, f"{name}: refused, naming the request: {want} ({out.strip()[:240]})")


refused("no-passkey", lambda o: [enrol("alice", alice), request("s1"), decision("s1", "alice", "approved", "go", None)],
        "without a passkey assertion")
refused("another-request", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go", alice.assert_(challenge(o, "s2", "approved", "go", "alice")))],
    "passkey assertion refused")
refused("another-outcome", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go", alice.assert_(challenge(o, "s1", "rejected", "go", "alice")))],
    "passkey assertion refused")
refused("another-call", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go",
    alice.assert_(challenge(o, "s1", "approved", "go", "alice", action="sha256:" + "cd" * 32)))],
    "passkey assertion refused")
refused("changed-response", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go now", alice.assert_(challenge(o, "s1", "approved", "go", "alice")))],
    "passkey assertion refused")
refused("wrong-origin", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go",
    alice.assert_(challenge(o, "s1", "approved", "go", "alice"), origin="https://evil.example"))],
    "passkey assertion refused")
refused("wrong-rp", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go",
    alice.assert_(challenge(o, "s1", "approved", "go", "alice"), rp_id="evil.example"))],
    "another relying party")
refused("no-user-verification", lambda o: [enrol("alice", alice), request("s1"), decision(
    "s1", "alice", "approved", "go", alice.assert_(challenge(o, "s1", "approved", "go", "alice"), flags=0x01))],
    "user presence or verification")
refused("another-reviewers-credential", lambda o: [enrol("alice", alice), enrol("bob", bob), request("s1"), decision(
    "s1", "alice", "approved", "go", bob.assert_(challenge(o, "s1", "approved", "go", "alice")))],
    "with a passkey enrolled to bob")
refused("not-enrolled", lambda o: [request("s1"), decision(
    "s1", "alice", "approved", "go", alice.assert_(challenge(o, "s1", "approved", "go", "alice")))],
    "not enrolled")
refused("removed", lambda o: [enrol("alice", alice), {"kind": "passkey", "event": "removed", "reviewer": "alice",
                                                      "credential_id": b64u(alice.id)},
                              request("s1"), decision("s1", "alice", "approved", "go",
                                                      alice.assert_(challenge(o, "s1", "approved", "go", "alice")))],
        "not enrolled")


def forged(o):  # minted with the gateway's keys, signed by a key that is not the person's
    mallory = Authenticator()
    mallory.id = alice.id
    return [enrol("alice", alice), request("s1"),
            decision("s1", "alice", "approved", "go", mallory.assert_(challenge(o, "s1", "approved", "go", "alice")))]


refused("forged-signature", forged, "passkey assertion refused")


def replayed(o):  # an assertion whose sign count does not move forward
    a0 = alice.assert_(challenge(o, "s0", "approved", "go", "alice"), count=9)
    a1 = alice.assert_(challenge(o, "s1", "approved", "go", "alice"), count=9)
    return [enrol("alice", alice), request("s0"), decision("s0", "alice", "approved", "go", a0),
            request("s1"), decision("s1", "alice", "approved", "go", a1)]


refused("replayed-count", replayed, "sign count did not move forward")


def swapped(o):  # request s0's assertion put in request s1's decision
    a0 = alice.assert_(challenge(o, "s0", "approved", "go", "alice"))
    return [enrol("alice", alice), request("s0"), request("s1"), decision("s1", "alice", "approved", "go", a0)]


refused("swapped", swapped, "passkey assertion refused")


def quorum_twice(o):
    p1 = alice.assert_(challenge(o, "s1", "approved", "go", "alice"))
    p2 = alice.assert_(challenge(o, "s1", "approved", "go", "alice"))
    return [enrol("alice", alice), request("s1"), decision("s1", "alice", "approved", "go", p1, kind="approval"),
            decision("s1", "alice", "approved", "go", p2, kind="approval")]


refused("quorum-twice", quorum_twice, "approved it twice")

# Root on the gateway's host holds the gateway's keys: it can append an enrolment of its own
# credential in alice's name and approve with it. The ledger alone cannot tell; an auditor who
# pinned the credentials each reviewer confirmed (--passkeys) refuses it.
mallory = Authenticator()
pins = os.path.join(TMP, "pins")
with open(pins, "w") as f:
    f.write(f"# confirmed with each reviewer\nalice {b64u(alice.id)}\nbob {b64u(bob.id)}\n")


def root_enrols(o):
    return [enrol("alice", alice), enrol("alice", mallory), request("s1"),
            decision("s1", "alice", "approved", "go", mallory.assert_(challenge(o, "s1", "approved", "go", "alice")))]


rc, out = ledger("root-enrols", root_enrols)
ok(rc == 0, "root's own enrolment in alice's name passes a verifier that trusts every enrolment (why pins exist)")
rc, out = ledger("root-enrols-pinned", root_enrols, ("--passkeys", pins))
ok(rc == 1 and "not among the passkeys you pinned" in out and "s1" in out,
   f"with --passkeys it is refused, naming the request ({out.strip()[:240]})")
rc, out = ledger("good-pinned", good, ("--passkeys", pins))
ok(rc == 0, f"alice's own pinned passkey still verifies with --passkeys ({out.strip()[:160]})")
with open(pins + ".bad", "w") as f:
    f.write("alice not*base64\n")
rc, out = ledger("bad-pins", good, ("--passkeys", pins + ".bad"))
ok(rc == 2 and "line 1" in out, f"a pins file that is not REVIEWER CREDENTIAL_ID is a usage error naming the line ({out.strip()[:160]})")

rc, out = ledger("rejected-without", lambda o: [enrol("alice", alice), request("s1"),
                                               decision("s1", "alice", "rejected", "no", None)])
ok(rc == 0, f"a refusal without a passkey verifies: it lets nothing run ({out.strip()[:160]})")
plan()
done()
