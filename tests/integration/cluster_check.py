"""Reads a cluster's shared ledger straight from PostgreSQL (psql, no assent code) and checks
it independently: every entry's seq is its row's, its prev is the leaf hash of the one before
(RFC 9162 leaf hashes), the head checkpoint's root is the Merkle tree hash of all the entries
and its signature verifies with the checkpoint key (ECDSA P-256, C2SP signed note). Prints
`ENTRIES REPLICAS-THAT-WROTE` and exits 0, or names the first fault and exits 1.
Usage: cluster_check.py PSQL_CONNINFO CHECKPOINT_PUB_PEM
"""
import base64
import hashlib
import os
import subprocess
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_tool import cbor_decode, leaf_hash, mth  # noqa: E402  (test code: an independent decoder)

DASH = "\u2014 "


def psql(conninfo, sql):
    out = subprocess.run(["psql", "-X", "-At", "-F", " ", "-d", conninfo, "-c", sql], check=True,
                         capture_output=True, text=True).stdout
    return [line.split(" ") for line in out.splitlines() if line]


def fail(msg):
    print("cluster_check: " + msg)
    sys.exit(1)


def main(conninfo, pub_path):
    pub = serialization.load_pem_public_key(open(pub_path, "rb").read())
    rows = psql(conninfo, "SELECT seq, encode(entry, 'hex'), replica FROM assent_ledger ORDER BY seq")
    head = int(psql(conninfo, "SELECT size FROM assent_head")[0][0])
    if len(rows) != head:
        fail("assent_head says %d entries, assent_ledger has %d" % (head, len(rows)))
    leaves, prev, writers = [], b"\0" * 32, set()
    for i, (seq, hexe, replica) in enumerate(rows):
        if int(seq) != i:
            fail("row %d holds seq %s" % (i, seq))
        e = bytes.fromhex(hexe)
        val, end = cbor_decode(e)
        if end != len(e):
            fail("entry %d has bytes after its map" % i)
        f = dict(val)
        if f.get("seq") != i:
            fail("entry %d says seq %r" % (i, f.get("seq")))
        if f.get("prev") != prev:
            fail("entry %d does not chain to entry %d" % (i, i - 1))
        prev = leaf_hash(e)
        leaves.append(prev)
        writers.add(replica)
    ck = psql(conninfo, "SELECT size, encode(note, 'hex') FROM assent_checkpoints ORDER BY size DESC LIMIT 1")
    note = bytes.fromhex(ck[0][1])
    body, _, sigs = note.partition(b"\n\n")
    body += b"\n"
    origin, size, root = body.decode().split("\n")[:3]
    if int(size) != head or int(ck[0][0]) != head:
        fail("the newest checkpoint covers %s entries, the ledger has %d" % (size, head))
    if base64.b64decode(root) != mth(leaves):
        fail("the head checkpoint's root is not the tree of the entries")
    der = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = hashlib.sha256(der).digest()[:4]
    good = False
    for line in sigs.decode().split("\n"):
        if not line.startswith(DASH):
            continue
        name, _, b64 = line[len(DASH):].partition(" ")
        blob = base64.b64decode(b64)
        if name == origin and blob[:4] == kid:
            try:
                pub.verify(blob[4:], body, ec.ECDSA(hashes.SHA256()))
                good = True
            except InvalidSignature:
                pass
    if not good:
        fail("the head checkpoint is not signed by the checkpoint key")
    print(head, len(writers))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
