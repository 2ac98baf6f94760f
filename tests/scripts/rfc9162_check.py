#!/usr/bin/env python3
"""An independent RFC 9162 consistency proof implementation (section 2.1.4), written from
the RFC with hashlib only, sharing no code with the product: the cross-check of
ledger/merkle.c and the witness's side of tests/integration/consistency.sh.

  rfc9162_check.py cross TOOL [PAIRS]
      Against build/tests/consist_tool: for PAIRS random (old, new) pairs (default 300) the C
      proofs verify here, the proofs made here verify in C, and altered ones are refused by
      both. TAP on stdout.
  rfc9162_check.py check OLD.ckpt NEW.ckpt PROOF
      The hashes only (no signature: use assent-verify consistency for that): the proof text
      (one base64 hash a line) leads from OLD's root to NEW's. Exit 0 holds, 1 not, 2 usage.
"""
import base64
import hashlib
import random
import subprocess
import sys


def leaf_hash(data):
    return hashlib.sha256(b'\x00' + data).digest()


def node_hash(left, right):
    return hashlib.sha256(b'\x01' + left + right).digest()


def largest_pow2_below(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves):
    """MTH(D[n]) of section 2.1.1, over leaf hashes."""
    if not leaves:
        return hashlib.sha256(b'').digest()
    if len(leaves) == 1:
        return leaves[0]
    k = largest_pow2_below(len(leaves))
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def subproof(m, leaves, complete):
    """SUBPROOF(m, D[n], b) of section 2.1.4.1."""
    n = len(leaves)
    if m == n:
        return [] if complete else [mth(leaves)]
    k = largest_pow2_below(n)
    if m <= k:
        return subproof(m, leaves[:k], complete) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


def prove(m, leaves):
    return subproof(m, leaves, True)


def verify(first, second, first_hash, second_hash, path):
    """Section 2.1.4.2, step by step; equal sizes take the empty proof and equal roots."""
    if first < 1 or first > second:
        return False
    if first == second:
        return not path and first_hash == second_hash
    if not path:
        return False
    path = list(path)
    if first & (first - 1) == 0:
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


def cross(tool, pairs):
    leaves = [leaf_hash(i.to_bytes(8, 'big')) for i in range(3000)]
    roots = {}

    def root(n):
        if n not in roots:
            roots[n] = mth(leaves[:n])
        return roots[n]

    p = subprocess.Popen([tool], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(line):
        p.stdin.write(line + '\n')
        p.stdin.flush()
        return p.stdout.readline().strip()

    rng = random.Random(9162)
    fails = 0
    cases = [(m, n) for n in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17) for m in range(1, n + 1)]
    cases += [(rng.randint(1, n), n) for n in (rng.randint(1, 3000) for _ in range(pairs))]
    for m, n in cases:
        c_proof = [bytes.fromhex(h) for h in ask('prove %d %d' % (m, n)).split() if h != '-']
        py_proof = prove(m, leaves[:n])
        ok_c_in_py = verify(m, n, root(m), root(n), c_proof)
        enc = ','.join(h.hex() for h in py_proof) or '-'
        ok_py_in_c = ask('verify %d %d %s %s %s' % (m, n, root(m).hex(), root(n).hex(), enc)) == 'ok'
        bad_c = True
        if py_proof:
            t = list(py_proof)
            i = rng.randrange(len(t))
            t[i] = bytes([t[i][0] ^ (1 << rng.randrange(8))]) + t[i][1:]
            enc = ','.join(h.hex() for h in t)
            bad_c = ask('verify %d %d %s %s %s' % (m, n, root(m).hex(), root(n).hex(), enc)) == 'bad' \
                and not verify(m, n, root(m), root(n), t)
        if not (c_proof == py_proof and ok_c_in_py and ok_py_in_c and bad_c):
            fails += 1
            print('not ok 1 - (%d, %d): same %s, C in Python %s, Python in C %s, altered refused %s' %
                  (m, n, c_proof == py_proof, ok_c_in_py, ok_py_in_c, bad_c))
    p.stdin.close()
    p.wait()
    print('%s 1 - %d (old, new) pairs: C and Python proofs identical, each verifies in the other, '
          'an altered one is refused by both' % ('ok' if fails == 0 else 'not ok', len(cases)))
    return 1 if fails else 0


def read_checkpoint(path):
    """origin, size, root of a C2SP tlog-checkpoint body (the signature is not checked here)."""
    lines = open(path, 'rb').read().split(b'\n')
    if len(lines) < 4:
        raise ValueError('%s: not a checkpoint' % path)
    root = base64.b64decode(lines[2], validate=True)
    if len(root) != 32 or not lines[1].isdigit():
        raise ValueError('%s: bad size or root' % path)
    return lines[0].decode(), int(lines[1]), root


def check(oldf, newf, prooff):
    try:
        o_origin, o_size, o_root = read_checkpoint(oldf)
        n_origin, n_size, n_root = read_checkpoint(newf)
        text = open(prooff, 'rb').read()
        if text and not text.endswith(b'\n'):
            raise ValueError('proof: the last line has no newline')
        path = [base64.b64decode(x, validate=True) for x in text.split(b'\n')[:-1]] if text else []
        if any(len(h) != 32 for h in path):
            raise ValueError('proof: a line is not a SHA-256 hash')
    except (OSError, ValueError) as e:
        print('rfc9162_check: %s' % e, file=sys.stderr)
        return 2
    if o_origin != n_origin or not verify(o_size, n_size, o_root, n_root, path):
        print('rfc9162_check: the proof does not lead from size %d to size %d' % (o_size, n_size),
              file=sys.stderr)
        return 1
    print('consistent: %s at size %d is a prefix of the tree at size %d' % (o_origin, o_size, n_size))
    return 0


def main():
    a = sys.argv[1:]
    if len(a) in (2, 3) and a[0] == 'cross':
        return cross(a[1], int(a[2]) if len(a) == 3 else 300)
    if len(a) == 4 and a[0] == 'check':
        return check(a[1], a[2], a[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
