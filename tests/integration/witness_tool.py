#!/usr/bin/python3
"""Plays outside witnesses for tests/integration/witness_verify.sh (C2SP tlog-cosignature,
cosignature/v1, Ed25519 from Python's cryptography module; no assent code), and edits a stopped
ledger's stored checkpoints with Python's lmdb, as the signer will when it keeps cosignatures.

    witness_tool.py key DIR NAME            make DIR/NAME.seed; print NAME's vkey
    witness_tool.py cosign DIR NAME NOTE [--time T] [--forge]
                                            print NAME's cosignature line for NOTE's body
                                            (--forge: one bit of the signature flipped)
    witness_tool.py get LEDGER SIZE         print the checkpoint stored at SIZE
    witness_tool.py append LEDGER SIZE FILE add FILE's lines after the one stored at SIZE
    witness_tool.py put LEDGER SIZE NOTE    store NOTE at SIZE in place of what is there"""
import base64
import hashlib
import os
import struct
import sys

import lmdb
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

T_DEFAULT = 1893456000  # a fixed time: the verifier takes any timestamp up to 2^63 - 1


def witness(d, name):
    k = ed25519.Ed25519PrivateKey.from_private_bytes(bytes.fromhex(open(os.path.join(d, name + ".seed")).read()))
    pub = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    wname = "witness.example/" + name
    kid = hashlib.sha256(wname.encode() + b"\n\x04" + pub).digest()[:4]
    return k, wname, kid, pub


def key(d, name):
    with open(os.path.join(d, name + ".seed"), "w") as f:
        f.write(os.urandom(32).hex())
    _, wname, kid, pub = witness(d, name)
    print(wname + "+" + kid.hex() + "+" + base64.b64encode(b"\x04" + pub).decode())


def cosign(d, name, note_path, t, forge):
    k, wname, kid, _ = witness(d, name)
    note = open(note_path, "rb").read()
    body = note[:note.index(b"\n\n") + 1]
    sig = bytearray(k.sign(b"cosignature/v1\ntime %d\n" % t + body))
    if forge:
        sig[5] ^= 1
    blob = kid + struct.pack(">Q", t) + bytes(sig)
    sys.stdout.write("\u2014 " + wname + " " + base64.b64encode(blob).decode() + "\n")


def env(ledger):
    return lmdb.open(ledger, max_dbs=4, map_size=1 << 30)


def get(ledger, size):
    e = env(ledger)
    with e.begin() as txn:
        v = txn.get(struct.pack(">Q", size), db=e.open_db(b"checkpoints", txn=txn, create=False))
    e.close()
    if v is None:
        sys.exit(f"witness_tool: no checkpoint stored at size {size}")
    sys.stdout.buffer.write(v)


def store(ledger, size, fn):
    e = env(ledger)
    with e.begin(write=True) as txn:
        db = e.open_db(b"checkpoints", txn=txn, create=False)
        k = struct.pack(">Q", size)
        old = txn.get(k, db=db)
        if old is None:
            sys.exit(f"witness_tool: no checkpoint stored at size {size}")
        txn.put(k, fn(bytes(old)), db=db)
    e.close()


def main(a):
    if len(a) == 3 and a[0] == "key":
        key(a[1], a[2])
    elif len(a) >= 4 and a[0] == "cosign":
        t = int(a[a.index("--time") + 1]) if "--time" in a else T_DEFAULT
        cosign(a[1], a[2], a[3], t, "--forge" in a)
    elif len(a) == 3 and a[0] == "get":
        get(a[1], int(a[2]))
    elif len(a) == 4 and a[0] == "append":
        lines = open(a[3], "rb").read()
        store(a[1], int(a[2]), lambda old: old + lines)
    elif len(a) == 4 and a[0] == "put":
        note = open(a[3], "rb").read()
        store(a[1], int(a[2]), lambda old: note)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
