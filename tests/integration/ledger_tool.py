"""Hands-on access to an assent ledger for the integration tests: read, edit and
damage the LMDB environment the way an attacker with write access could, and
recompute hashes independently of the C code. Run with /usr/bin/python3 (it needs
Debian's python3-lmdb). Usage: ledger_tool.py COMMAND ARGS (see the commands below).
"""
import base64
import hashlib
import json
import os
import random
import struct
import subprocess
import sys

import lmdb

# ---- a small CBOR codec, enough for ledger entries, kept independent of the C one ----


def _head(data, off):
    ib = data[off]
    major, info = ib >> 5, ib & 0x1F
    off += 1
    if info < 24:
        return major, info, off
    n = {24: 1, 25: 2, 26: 4, 27: 8}.get(info)
    if n is None:
        raise ValueError("unsupported additional info %d at %d" % (info, off - 1))
    return major, int.from_bytes(data[off:off + n], "big"), off + n


def cbor_decode(data, off=0):
    """Returns (value, next offset). Maps become lists of (key, value) pairs."""
    major, val, off = _head(data, off)
    if major == 0:
        return val, off
    if major == 1:
        return -1 - val, off
    if major == 2:
        return bytes(data[off:off + val]), off + val
    if major == 3:
        return bytes(data[off:off + val]).decode("utf-8"), off + val
    if major == 4:
        items = []
        for _ in range(val):
            v, off = cbor_decode(data, off)
            items.append(v)
        return items, off
    if major == 5:
        pairs = []
        for _ in range(val):
            k, off = cbor_decode(data, off)
            v, off = cbor_decode(data, off)
            pairs.append((k, v))
        return Map(pairs), off
    if major == 7:
        return {20: False, 21: True, 22: None}[val], off
    raise ValueError("unsupported major type %d" % major)


class Map(list):
    """A decoded map, kept as an ordered list of pairs so it can be re-encoded badly."""


def head(major, val, width=None):
    """A CBOR head; width forces a longer (non-canonical) form: 1, 2, 4 or 8 bytes."""
    if width is None:
        if val < 24:
            return bytes([major << 5 | val])
        width = 1 if val < 0x100 else 2 if val < 0x10000 else 4 if val < 0x100000000 else 8
    info = {1: 24, 2: 25, 4: 26, 8: 27}[width]
    return bytes([major << 5 | info]) + val.to_bytes(width, "big")


def cbor_encode(v, sort=True):
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if v is None:
        return b"\xf6"
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode("utf-8")
        return head(3, len(b)) + b
    if isinstance(v, Map) or isinstance(v, dict):
        pairs = list(v.items()) if isinstance(v, dict) else list(v)
        enc = [(cbor_encode(k, sort), cbor_encode(x, sort)) for k, x in pairs]
        if sort:
            enc.sort(key=lambda p: p[0])
        return head(5, len(enc)) + b"".join(k + x for k, x in enc)
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(cbor_encode(x, sort) for x in v)
    raise TypeError(type(v))


def to_json(v):
    if isinstance(v, Map):
        return {k: to_json(x) for k, x in v}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    return v


# ---- hashes (RFC 9162) ----


def leaf_hash(b):
    return hashlib.sha256(b"\x00" + b).digest()


def mth(leaves):
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


# ---- LMDB access ----


def env_open(d):
    # No fsync: these are scratch copies, and other processes see the pages anyway.
    return lmdb.open(d, max_dbs=4, subdir=True, sync=False, metasync=False)


def key(n):
    return struct.pack(">Q", n)


def entries(d):
    env = env_open(d)
    db = env.open_db(b"entries")
    with env.begin(db=db) as t:
        out = [(struct.unpack(">Q", k)[0], bytes(v)) for k, v in t.cursor()]
    env.close()
    return out


def edit(d, fn):
    env = env_open(d)
    dbs = {n: env.open_db(n.encode()) for n in ("entries", "checkpoints", "meta")}
    with env.begin(write=True) as t:
        fn(t, dbs)
    env.close()


def get_entry(d, seq):
    env = env_open(d)
    db = env.open_db(b"entries")
    with env.begin(db=db) as t:
        v = t.get(key(seq))
    env.close()
    if v is None:
        sys.exit("no entry %d" % seq)
    return bytes(v)


def put_entry(d, seq, value):
    edit(d, lambda t, dbs: t.put(key(seq), value, db=dbs["entries"]))


def field_offset(value, name):
    """Offset of the head byte of the value of top-level field NAME."""
    _, n, off = _head(value, 0)
    for _ in range(n):
        k, off = cbor_decode(value, off)
        if k == name:
            return off
        _, off = cbor_decode(value, off)
    sys.exit("no field %s" % name)


def position(value, spec):
    """POS: an integer (negative counts from the end), text:S (first byte of S),
    field:NAME (head of NAME's value), field:NAME+K (K bytes after it),
    key:NAME (first character of the key NAME)."""
    if spec.startswith("text:"):
        i = value.find(spec[5:].encode())
        if i < 0:
            sys.exit("text %r not in entry" % spec[5:])
        return i
    if spec.startswith("key:"):
        name = spec[4:].encode()
        i = value.find(bytes([0x60 | len(name)]) + name)
        if i < 0:
            sys.exit("key %r not in entry" % spec[4:])
        return i + 1
    if spec.startswith("field:"):
        name, _, plus = spec[6:].partition("+")
        return field_offset(value, name) + (int(plus) if plus else 0)
    p = int(spec)
    return p if p >= 0 else len(value) + p


# ---- commands ----


def cmd_count(d):
    print(len(entries(d)))


def cmd_get(d, seq):
    print(get_entry(d, int(seq)).hex())


def cmd_put(d, seq, hexval):
    """HEX, or @FILE holding the hex (a large value does not fit in one argument)."""
    if hexval.startswith("@"):
        with open(hexval[1:]) as fh:
            hexval = fh.read().strip()
    put_entry(d, int(seq), bytes.fromhex(hexval))


def cmd_flip(d, seq, spec, mask="01"):
    v = bytearray(get_entry(d, int(seq)))
    p = position(bytes(v), spec)
    v[p] ^= int(mask, 16)
    put_entry(d, int(seq), bytes(v))
    print("flipped byte %d of %d in entry %s" % (p, len(v), seq))


def cmd_del(d, *seqs):
    def f(t, dbs):
        for s in seqs:
            if not t.delete(key(int(s)), db=dbs["entries"]):
                sys.exit("no entry %s" % s)
    edit(d, f)


def cmd_swap(d, a, b):
    def f(t, dbs):
        va, vb = t.get(key(int(a)), db=dbs["entries"]), t.get(key(int(b)), db=dbs["entries"])
        t.put(key(int(a)), bytes(vb), db=dbs["entries"])
        t.put(key(int(b)), bytes(va), db=dbs["entries"])
    edit(d, f)


def cmd_truncate(d, size):
    """Cut the ledger back to SIZE entries as a careful attacker would: entries,
    checkpoints above SIZE, and the checkpoint file (set to the one at SIZE)."""
    size = int(size)
    note = {}

    def f(t, dbs):
        for k, _ in list(t.cursor(db=dbs["entries"])):
            if struct.unpack(">Q", k)[0] >= size:
                t.delete(k, db=dbs["entries"])
        for k, v in list(t.cursor(db=dbs["checkpoints"])):
            s = struct.unpack(">Q", k)[0]
            if s == size:
                note["v"] = bytes(v)
            if s > size:
                t.delete(k, db=dbs["checkpoints"])
    edit(d, f)
    if "v" not in note:
        sys.exit("no stored checkpoint at size %d" % size)
    with open(os.path.join(d, "checkpoint"), "wb") as fh:
        fh.write(note["v"])


def cmd_ckpt_sizes(d):
    env = env_open(d)
    db = env.open_db(b"checkpoints")
    with env.begin(db=db) as t:
        print(" ".join(str(struct.unpack(">Q", k)[0]) for k, _ in t.cursor()))
    env.close()


def cmd_ckpt_put(d, size, path):
    with open(path, "rb") as fh:
        v = fh.read()
    edit(d, lambda t, dbs: t.put(key(int(size)), v, db=dbs["checkpoints"]))


def cmd_noncanon(d, seq, mode):
    """Rewrite entry SEQ with the same content in a non-canonical encoding."""
    v = get_entry(d, int(seq))
    m, end = cbor_decode(v)
    assert end == len(v) and cbor_encode(m) == v, "entry was not canonical to begin with"
    if mode == "longint":  # seq written with a 8-byte head instead of the shortest
        out = head(5, len(m))
        for k, x in m:
            out += cbor_encode(k) + (head(0, x, 8) if k == "seq" else cbor_encode(x))
    elif mode == "longlen":  # the message's length in a 2-byte head though it is short
        out = head(5, len(m))
        for k, x in m:
            if k == "message":
                b = x.encode()
                out += cbor_encode(k) + head(3, len(b), 2) + b
            else:
                out += cbor_encode(k) + cbor_encode(x)
    elif mode == "unsorted":  # the same pairs, in reverse order
        out = head(5, len(m)) + b"".join(cbor_encode(k) + cbor_encode(x) for k, x in reversed(m))
    elif mode == "dup":  # one key twice (the same value), count adjusted
        pairs = list(m) + [p for p in m if p[0] == "message"]
        pairs.sort(key=lambda p: cbor_encode(p[0]))
        out = head(5, len(pairs)) + b"".join(cbor_encode(k) + cbor_encode(x) for k, x in pairs)
    elif mode == "indef":  # indefinite-length map
        out = b"\xbf" + b"".join(cbor_encode(k) + cbor_encode(x) for k, x in m) + b"\xff"
    elif mode == "trailing":  # a valid entry followed by one more byte
        out = v + b"\x00"
    else:
        sys.exit("unknown mode " + mode)
    assert out != v
    put_entry(d, int(seq), out)


def cmd_dump(d):
    """Entries decoded independently of the C code, as JSON lines."""
    for s, v in entries(d):
        m, end = cbor_decode(v)
        assert end == len(v)
        print(json.dumps({"seq": s, "leaf_hash": leaf_hash(v).hex(), "entry": to_json(m)}, sort_keys=True))


def cmd_chain(d):
    """Checks independently that every stored entry is canonical, numbered from 0,
    and linked to its predecessor; prints the count and RFC 9162 root."""
    prev = bytes(32)
    leaves = []
    for i, (s, v) in enumerate(entries(d)):
        m, end = cbor_decode(v)
        fields = dict(m)
        if s != i or end != len(v) or cbor_encode(m) != v or fields["seq"] != s or fields["prev"] != prev:
            sys.exit("entry %d is not what the format says" % s)
        prev = leaf_hash(v)
        leaves.append(prev)
    print(len(leaves), mth(leaves).hex())


def cmd_rawflip(path, text, mask="01"):
    """Flip the first byte of every copy of TEXT in data.mdb in place, without LMDB:
    a hex editor's attack. Copy-on-write may have left stale copies in free pages;
    flipping all of them makes sure the live one is hit."""
    with open(path, "r+b") as fh:
        data = bytearray(fh.read())
        t = text.encode()
        hits = []
        i = data.find(t)
        while i >= 0:
            hits.append(i)
            data[i] ^= int(mask, 16)
            i = data.find(t, i + 1)
        if not hits:
            sys.exit("text %r not in %s" % (text, path))
        fh.seek(0)
        fh.write(data)
    print("flipped %d copies" % len(hits))


def cmd_reappend(export_path, seq, new_message, keep_first="no"):
    """JSON lines for `assent ledger append` that replay an export with one message
    changed: v, seq, time and prev are dropped (the ledger sets them); entry 0 (the
    automatic key entry) is kept only with keep_first=yes."""
    seq = int(seq)
    changed = False
    with open(export_path) as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["seq"] == 0 and keep_first != "yes":
                continue
            e = rec["entry"]
            for f in ("v", "seq", "time", "prev"):
                del e[f]
            if rec["seq"] == seq:
                assert e["message"] != new_message
                e["message"] = new_message
                changed = True
            print(json.dumps(e))
    if not changed:
        sys.exit("no entry %d in the export" % seq)


def entries_digest(d):
    """SHA-256 over every (key, value) of the entries database, read without a lock in a
    forked child (a damaged file may crash LMDB); None when the child could not read it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            env = lmdb.open(d, max_dbs=4, readonly=True, lock=False, subdir=True)
            db = env.open_db(b"entries", create=False)
            h = hashlib.sha256()
            with env.begin(db=db) as t:
                for k, v in t.cursor():
                    h.update(struct.pack(">I", len(k)) + bytes(k) + struct.pack(">I", len(v)) + bytes(v))
            os.write(w, h.hexdigest().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.close(r)
    _, st = os.waitpid(pid, 0)
    return out.decode() if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 else None


def cmd_bitflips(src, runs, seed, verify, keyfile, work):
    """Copies data.mdb of SRC into WORK, flips one random bit, runs `assent-verify
    ledger`, RUNS times. Prints one JSON summary: exit codes seen, runs killed by a
    signal or timed out, runs whose stderr was not exactly one line on failure."""
    rng = random.Random(int(seed))
    with open(os.path.join(src, "data.mdb"), "rb") as fh:
        orig = fh.read()
    # Half the flips land anywhere (most of the file is free space, where a flip may
    # change nothing), half on non-zero bytes: page headers, keys, values, meta.
    nonzero = [i for i, b in enumerate(orig) if b]
    os.makedirs(work, exist_ok=True)
    stats = {"codes": {}, "signal": [], "timeout": [], "bad_stderr": [], "reader_killed": 0, "crash_text": [],
             "exit2": [], "missed": [], "unreadable_but_intact": []}
    want = entries_digest(src)
    for i in range(int(runs)):
        pos = rng.randrange(len(orig)) if i % 2 else rng.choice(nonzero)
        bit = 1 << rng.randrange(8)
        data = bytearray(orig)
        data[pos] ^= bit
        for n in ("data.mdb", "lock.mdb", "checkpoint"):
            p = os.path.join(work, n)
            if os.path.exists(p):
                os.unlink(p)
        with open(os.path.join(work, "data.mdb"), "wb") as fh:
            fh.write(data)
        with open(os.path.join(src, "checkpoint"), "rb") as a, open(os.path.join(work, "checkpoint"), "wb") as b:
            b.write(a.read())
        where = "run %d: byte %d bit %d" % (i, pos, bit)
        try:
            p = subprocess.run([verify, "ledger", work, "--key", keyfile], capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            stats["timeout"].append(where)
            continue
        rc = p.returncode
        stats["codes"][str(rc)] = stats["codes"].get(str(rc), 0) + 1
        if rc < 0 or rc not in (0, 1, 2):
            stats["signal"].append("%s: exit %d" % (where, rc))
            continue
        err = p.stderr.decode("utf-8", "replace")
        lines = [l for l in err.split("\n") if l]
        if rc != 0 and len(lines) != 1:
            stats["bad_stderr"].append("%s: %r" % (where, err[:200]))
        # The copy has no lock.mdb (each run starts without one): the verifier reads it
        # without a lock, creates none, and says so in one note.
        if rc == 0 and [l for l in lines if not l.startswith("assent-verify: note: read without LMDB's lock")]:
            stats["bad_stderr"].append("%s (exit 0): %r" % (where, err[:200]))
        if os.path.exists(os.path.join(work, "lock.mdb")):
            stats["bad_stderr"].append("%s: the verifier created lock.mdb" % where)
        if rc == 0:
            # Intact must mean it: the entries as an independent reader sees them are
            # the original ones (a flip in free space or a stale page changes nothing).
            got = entries_digest(work)
            if got is None:
                stats["unreadable_but_intact"].append(where)
            elif got != want:
                stats["missed"].append(where)
        if rc == 2:
            stats["exit2"].append("%s: %s" % (where, err.strip()[:160]))
        if "killed the LMDB reader" in err:
            stats["reader_killed"] += 1
        if "AddressSanitizer" in err or "runtime error" in err:
            stats["crash_text"].append(where)
    print(json.dumps(stats))


def cmd_proofflips(proof, verify, keyfile, work, mask="01"):
    """Flips every byte of a proof file in turn and runs `proof --check`; prints a
    JSON summary with the positions that still passed and any odd exit."""
    with open(proof, "rb") as fh:
        orig = fh.read()
    passed, odd, codes = [], [], {}
    path = os.path.join(work, "flipped.json")
    for i in range(len(orig)):
        data = bytearray(orig)
        data[i] ^= int(mask, 16)
        with open(path, "wb") as fh:
            fh.write(data)
        p = subprocess.run([verify, "proof", "--check", path, "--key", keyfile], capture_output=True, timeout=20)
        codes[str(p.returncode)] = codes.get(str(p.returncode), 0) + 1
        if p.returncode == 0:
            passed.append("%d (%r -> %r)" % (i, chr(orig[i]), chr(data[i])))
        elif p.returncode != 1 or len([l for l in p.stderr.split(b"\n") if l]) != 1:
            odd.append("%d: exit %d %r" % (i, p.returncode, p.stderr[:120]))
    print(json.dumps({"bytes": len(orig), "codes": codes, "passed": passed, "odd": odd}))


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64_dirty(s):
    """The same bytes in non-canonical base64: an unused padding bit set. None when
    the text has no padding (then every bit carries data)."""
    pad = len(s) - len(s.rstrip("="))
    if pad == 0:
        return None
    i = len(s) - pad - 1
    return s[:i] + B64[B64.index(s[i]) | 1] + s[i + 1:]


def cmd_b64pad(proof, out, where):
    """Writes PROOF to OUT with the base64 of WHERE (entry, or sig: the signature in
    its checkpoint) re-spelled with a padding bit set. Exit 3 when it has no padding."""
    with open(proof) as fh:
        p = json.load(fh)
    if where == "entry":
        d = b64_dirty(p["entry"])
        if d is None:
            sys.exit(3)
        assert base64.b64decode(d) == base64.b64decode(p["entry"])
        p["entry"] = d
    else:
        lines = p["checkpoint"].split("\n")
        head_, sig = lines[-2].rsplit(" ", 1)
        d = b64_dirty(sig)
        if d is None:
            sys.exit(3)
        lines[-2] = head_ + " " + d
        p["checkpoint"] = "\n".join(lines)
    with open(out, "w") as fh:
        fh.write(json.dumps(p, separators=(",", ":"), ensure_ascii=False) + "\n")


# ---- rewriting history as an attacker with write access but without the key would ----


def _set(m, path, value):
    """Set the field at PATH (dot-separated) in a decoded map."""
    name, _, rest = path.partition(".")
    for i, (k, v) in enumerate(m):
        if k == name:
            if rest:
                _set(v, rest, value)
            else:
                m[i] = (k, value)
            return
    if rest:
        sys.exit("no field %s" % name)
    m.append((name, value))


def _get(m, name):
    for k, v in m:
        if k == name:
            return v
    return None


def _frontier(leaves):
    """The tree state the C writer keeps in meta: size, then the root of each full
    subtree (low bit first), as merkle_serialize writes it."""
    out = struct.pack(">Q", len(leaves))
    off, parts = 0, []
    for i in reversed(range(64)):
        if (len(leaves) >> i) & 1:
            parts.append((i, mth(leaves[off:off + (1 << i)])))
            off += 1 << i
    for i, h in sorted(parts):
        out += h
    return out


def rechain(d, vals):
    """Store VALS (decoded entries, in order) as the whole ledger: seq renumbered from 0,
    every prev recomputed, and the tree state in meta recomputed, so the chain holds
    together and the writer's own open check passes. Checkpoints are left as they are."""
    prev, enc, leaves = bytes(32), [], []
    for i, m in enumerate(vals):
        _set(m, "seq", i)
        _set(m, "prev", prev)
        b = cbor_encode(m)
        enc.append(b)
        prev = leaf_hash(b)
        leaves.append(prev)

    def f(t, dbs):
        for k, _ in list(t.cursor(db=dbs["entries"])):
            t.delete(k, db=dbs["entries"])
        for i, b in enumerate(enc):
            t.put(key(i), b, db=dbs["entries"])
        if len(leaves):
            t.put(b"merkle", _frontier(leaves), db=dbs["meta"])
            t.put(b"head", leaves[-1], db=dbs["meta"])
    edit(d, f)


def decoded(d):
    return [cbor_decode(v)[0] for _, v in entries(d)]


def cmd_find(d, kind, field, value):
    """The seq of the first entry of KIND whose FIELD (dot path) equals VALUE (JSON)."""
    want = json.loads(value)
    for seq, m in enumerate(decoded(d)):
        if _get(m, "kind") != kind:
            continue
        v = m
        for part in field.split("."):
            v = _get(v, part) if isinstance(v, Map) else None
        if v == want:
            print(seq)
            return
    sys.exit("no %s entry with %s = %s" % (kind, field, value))


def cmd_rewrite(d, seq, path, value):
    """Set field PATH of entry SEQ to VALUE (JSON), then recompute the chain."""
    vals = decoded(d)
    _set(vals[int(seq)], path, json.loads(value))
    rechain(d, vals)


def cmd_drop(d, *seqs):
    """Drop entries SEQS, renumber the rest and recompute the chain."""
    gone = {int(x) for x in seqs}
    rechain(d, [m for i, m in enumerate(decoded(d)) if i not in gone])


def cmd_ckpt_keep(d, which):
    """Delete stored checkpoints: keep none, only the first, or all but the newest."""
    def f(t, dbs):
        ks = [bytes(k) for k, _ in t.cursor(db=dbs["checkpoints"])]
        keep = {"none": [], "first": ks[:1], "but-newest": ks[:-1]}[which]
        for k in ks:
            if k not in keep:
                t.delete(k, db=dbs["checkpoints"])
    edit(d, f)


def sign_note(keyfile, origin, size, root):
    """A C2SP signed note (ECDSA P-256, key type 0x02) made with python-cryptography."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    with open(keyfile, "rb") as fh:
        k = serialization.load_pem_private_key(fh.read(), None)
    spki = k.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    body = "%s\n%d\n%s\n" % (origin, size, base64.b64encode(root).decode())
    sig = k.sign(body.encode(), ec.ECDSA(hashes.SHA256()))
    blob = hashlib.sha256(spki).digest()[:4] + sig
    return (body + "\n\u2014 %s %s\n" % (origin, base64.b64encode(blob).decode())).encode()


def cmd_resign(d, keyfile, origin=None):
    """Replace every checkpoint (stored and the file) by one signed note for the whole
    tree, signed with KEYFILE: what a forger with a key of their own, or a writer with
    the real key, leaves."""
    ls = [leaf_hash(v) for _, v in entries(d)]
    if origin is None:
        from cryptography.hazmat.primitives import serialization
        with open(keyfile, "rb") as fh:
            k = serialization.load_pem_private_key(fh.read(), None)
        spki = k.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
        origin = "assent/" + hashlib.sha256(spki).digest()[:4].hex()
    note = sign_note(keyfile, origin, len(ls), mth(ls))

    def f(t, dbs):
        for k, _ in list(t.cursor(db=dbs["checkpoints"])):
            t.delete(k, db=dbs["checkpoints"])
        t.put(key(len(ls)), note, db=dbs["checkpoints"])
    edit(d, f)
    with open(os.path.join(d, "checkpoint"), "wb") as fh:
        fh.write(note)


def cmd_spki_sha256(pubfile):
    """SHA-256 of a PEM public key's DER SubjectPublicKeyInfo, in hex."""
    from cryptography.hazmat.primitives import serialization
    with open(pubfile, "rb") as fh:
        k = serialization.load_pem_public_key(fh.read())
    print(hashlib.sha256(k.public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)).hexdigest())


def cmd_newkey(priv, pub):
    """A fresh P-256 key pair as PEM files (the forger's own key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    k = ec.generate_private_key(ec.SECP256R1())
    with open(priv, "wb") as fh:
        fh.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                 serialization.NoEncryption()))
    with open(pub, "wb") as fh:
        fh.write(k.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    fn = globals().get("cmd_" + sys.argv[1].replace("-", "_"))
    if not fn:
        sys.exit("unknown command " + sys.argv[1])
    fn(*sys.argv[2:])


if __name__ == "__main__":
    main()
