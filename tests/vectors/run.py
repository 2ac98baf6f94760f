#!/usr/bin/python3
"""Runs every vector of manifest.json through assent-verify and through check.py (the
independent checker written from docs/verification.md) and prints one TAP line for each
vector and checker: it passes when the checker's verdict is the manifest's, and for
assent-verify when its one-line reason holds the manifest's verify_err. A vector on which the
two checkers disagree fails for the one that is wrong.

Token vectors are checked as of the time their manifest entry names (args.now): by
build/tests/assent-verify-dyn (the same objects as build/assent-verify, linked dynamically)
under faketime, which cannot set the clock of the static build.

    tests/vectors/run.py [--verify build/assent-verify] [--only ID-PREFIX]"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import check  # noqa: E402


def at(unix):  # faketime's frozen-clock spelling of a unix time
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(unix))


def lmdb_of(f, tmp):
    """A ledger vector as the LMDB environment the gateway keeps: entries under 8-byte big-endian
    sequence numbers, checkpoints under their tree size (Python's lmdb: an independent writer)."""
    import lmdb

    d = os.path.join(tmp, f.replace("/", "_"))
    if os.path.exists(d):
        return d
    doc = json.load(open(os.path.join(HERE, f)))
    os.makedirs(d)
    env = lmdb.open(d, max_dbs=4, map_size=1 << 24)
    ent, ck = env.open_db(b"entries"), env.open_db(b"checkpoints")
    with env.begin(write=True) as txn:
        for i, e in enumerate(doc["entries"]):
            txn.put(i.to_bytes(8, "big"), base64.b64decode(e), db=ent)
        for c in doc["checkpoints"]:
            txn.put(int(c.split("\n")[1]).to_bytes(8, "big"), c.encode(), db=ck)
    env.close()
    return d


def verify_cmd(v, exe, dyn, tmp):
    a = v["args"] if "args" in v else {}
    p = lambda f: os.path.join(HERE, f)
    env = dict(os.environ, TZ="UTC")
    if v["object"] == "token":
        cmd = [dyn, "token", "-", "--aud", a["aud"]]
        if "key" in a:
            cmd += ["--key", p(a["key"])]
        if "jwks" in a:
            cmd += ["--jwks", p(a["jwks"])]
        if "secret_file" in a:
            env["VECTOR_SECRET"] = open(p(a["secret_file"])).read()
            cmd += ["--secret-env", "VECTOR_SECRET"]
        for h in a.get("subject_sha256", []):
            cmd += ["--subject-sha256", h]
        for f in a.get("subject", []):
            cmd += ["--subject", f]  # relative to HERE, as the token names it
        if "action_sha256" in a:
            cmd += ["--action-sha256", a["action_sha256"]]
        if "iss" in a:
            cmd += ["--iss", a["iss"]]
        if a.get("require_computed"):
            cmd += ["--require-computed"]
        if "ledger" in a:
            cmd += ["--ledger", lmdb_of(a["ledger"], tmp)]
        return ["faketime", "-f", at(a["now"])] + cmd, open(p(v["file"]), "rb").read(), env
    if v["object"] == "entry":
        return [exe, "proof", "--check", p(a["proof"]), "--key", p(a["key"])], None, env
    if v["object"] == "tree":
        if "args" not in v:  # tree.json: its roots are checked through the proofs below
            return None, None, env
        return [exe, "proof", "--check", p(v["file"]), "--key", p(a["key"])], None, env
    if v["object"] == "ledger":
        return [exe, "ledger", lmdb_of(v["file"], tmp), "--key", p(a["key"])], None, env
    if v["object"] == "checkpoint":
        return [exe, "proof", "--check", p(a["proof"]), "--key", p(a["key"]), "--checkpoint", p(v["file"])], None, env
    if v["object"] == "cosig":  # the checkpoint and its cosignatures, by the witnesses named
        cmd = [exe, "checkpoint", "--check", p(v["file"]), "--key", p(a["key"])]
        for w in a["witnesses"]:
            cmd += ["--witness", open(p(w)).read().strip("\n")]
        return cmd + ["--witness-threshold", str(a["threshold"])], None, env
    if v["object"] == "vkey":  # a witness key: an unusable one is a usage error (exit 2)
        return [exe, "checkpoint", "--check", p(a["note"]), "--key", p(a["key"]), "--witness",
                open(p(v["file"])).read().strip("\n")], None, env
    raise ValueError(v["object"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--verify", default=os.path.join(ROOT, "build/assent-verify"))
    ap.add_argument("--verify-dyn", default=os.path.join(ROOT, "build/tests/assent-verify-dyn"),
                    help="the same program linked dynamically, for faketime (token vectors)")
    ap.add_argument("--only", default="")
    o = ap.parse_args()
    doc = json.load(open(os.path.join(HERE, "manifest.json")))
    tmp = tempfile.mkdtemp(prefix="assent-vectors-run.")
    n = fails = 0
    disagree = []
    for v in doc["vectors"]:
        if not v["id"].startswith(o.only):
            continue
        want = v["expect"] == "valid"
        # assent-verify
        cmd, stdin, env = verify_cmd(v, o.verify, o.verify_dyn, tmp)
        av = None
        if cmd:
            r = subprocess.run(cmd, input=stdin, capture_output=True, env=env, cwd=HERE)
            err = r.stderr.decode(errors="replace").strip().splitlines()
            why = err[-1] if err else ""
            av = r.returncode == 0
            n += 1
            codes = (0, 2) if v["object"] == "vkey" else (0, 1)
            good = r.returncode in codes and av == want and (av or re.search(v.get("verify_err", ""), why))
            if good:
                print(f"ok {n} - assent-verify: {v['id']}: {'holds' if av else 'refused: ' + why[:120]}")
            else:
                fails += 1
                print(f"not ok {n} - assent-verify: {v['id']}: exit {r.returncode}, expected {v['expect']} "
                      f"({v['reason']}){'; verify_err ' + repr(v.get('verify_err')) if 'verify_err' in v else ''}; "
                      f"stderr: {why[:200]}")
        # check.py
        try:
            check.check_vector(v, HERE)
            py, pwhy = True, ""
        except check.Refused as e:
            py, pwhy = False, str(e)
        n += 1
        if py == want:
            print(f"ok {n} - check.py: {v['id']}: {'holds' if py else 'refused: ' + pwhy[:120]}")
        else:
            fails += 1
            print(f"not ok {n} - check.py: {v['id']}: {'holds' if py else 'refused: ' + pwhy[:200]}, expected "
                  f"{v['expect']} ({v['reason']})")
        if av is not None and av != py:
            disagree.append(v["id"])
    n += 1
    if disagree:
        fails += 1
        print(f"not ok {n} - assent-verify and check.py disagree on: {', '.join(disagree)}")
    else:
        print(f"ok {n} - assent-verify and check.py agree on every vector")
    print(f"1..{n}")
    shutil.rmtree(tmp)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
