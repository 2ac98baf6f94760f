#!/usr/bin/env python3
"""Does the ledger export (assent-verify export) hold an entry of KIND for SESSION_ID
for which the Python expression EXPR (over the entry, `e`) is true? Exit 0 or 1.
Usage: entry_check.py EXPORT.jsonl KIND SESSION_ID EXPR"""
import json, sys

path, kind, sid, expr = sys.argv[1:5]
for line in open(path):
    e = json.loads(line)["entry"]
    if e.get("kind") == kind and e.get("session_id") == sid:
        sys.exit(0 if eval(expr, {}, {"e": e}) else 1)
sys.exit(1)
