#!/usr/bin/env python3
"""Consistency proofs made from the ledger's tiles (ledger/tiles.h) on a ledger of a few
thousand entries, checked against an independent RFC 9162 implementation
(tests/scripts/rfc9162_check.py: hashlib only) over leaf hashes read here from the LMDB
file with python3-lmdb: the same proofs with the tiles and without them (a ledger from
before tiles), and a tampered tile refused rather than turned into a proof.

  tiles_check.py VERIFY LEDGER_DIR TMP
"""
import os
import shutil
import struct
import subprocess
import sys

import lmdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import rfc9162_check as rfc  # noqa: E402

VERIFY, LEDGER, TMP = sys.argv[1:4]
n = failed = 0


def ok(cond, desc):
    global n, failed
    n += 1
    failed += not cond
    print(f"{'ok' if cond else 'not ok'} {n} - {desc}")
    return cond


def leaves_of(d):
    env = lmdb.open(d, max_dbs=4, readonly=True, lock=False)
    with env.begin() as txn:
        db = env.open_db(b"entries", txn=txn, create=False)
        out = [rfc.leaf_hash(bytes(v)) for _, v in txn.cursor(db=db)]
        tiles = env.open_db(b"tiles", txn=txn, create=False)
        ntiles = txn.stat(tiles)["entries"]
    env.close()
    return out, ntiles


def proof(d, old, new):
    r = subprocess.run([VERIFY, "consistency", d, str(old), str(new)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    import base64
    return [base64.b64decode(l) for l in r.stdout.splitlines()], r.stdout


leaves, ntiles = leaves_of(LEDGER)
N = len(leaves)
ok(ntiles == N // 1024, f"the writer kept one tile per complete run of 1,024 leaves ({ntiles} for {N} entries)")
env = lmdb.open(LEDGER, max_dbs=4, readonly=True, lock=False)
with env.begin() as txn:
    tiles = env.open_db(b"tiles", txn=txn, create=False)
    good = all(bytes(txn.get(struct.pack(">Q", t), db=tiles)) == rfc.mth(leaves[t * 1024:(t + 1) * 1024])
               for t in range(ntiles))
env.close()
ok(good, "each tile is the RFC 9162 hash of its 1,024 leaves, computed here")

pairs = [(1, N), (1023, N), (1024, N), (1025, N), (2047, N), (2048, N), (3000, N), (N - 1, N), (N, N)]
texts = {}
bad = []
for old, new in pairs:
    path, text = proof(LEDGER, old, new)
    texts[(old, new)] = text
    if path is None or not rfc.verify(old, new, rfc.mth(leaves[:old]), rfc.mth(leaves[:new]), path):
        bad.append((old, new, text if path is None else "does not verify"))
ok(not bad, f"proofs from {len(pairs)} sizes to {N}, made with tiles, verify independently {bad[:2]}")

# The same ledger without its tiles (as written before them): the same proofs, computed
# from the entries alone.
notiles = os.path.join(TMP, "notiles")
shutil.copytree(LEDGER, notiles)
env = lmdb.open(notiles, max_dbs=4)
with env.begin(write=True) as txn:
    txn.drop(env.open_db(b"tiles", txn=txn), delete=True)
env.close()
same = all(proof(notiles, o, nw)[1] == texts[(o, nw)] for o, nw in pairs)
ok(same, "without the tiles the same proofs come out, byte for byte")

# A tampered tile: the root it gives is not the signed one, so no proof is given.
bent = os.path.join(TMP, "bent")
shutil.copytree(LEDGER, bent)
env = lmdb.open(bent, max_dbs=4)
with env.begin(write=True) as txn:
    txn.put(struct.pack(">Q", 1), b"\x00" * 32, db=env.open_db(b"tiles", txn=txn))
env.close()
path, text = proof(bent, 1000, N)
ok(path is None and "differs from its signed checkpoint" in text,
   f"a tampered tile is refused, not made into a proof ({text[:160]})")
print(f"1..{n}")
sys.exit(1 if failed else 0)
