#!/usr/bin/env python3
"""A minimal stdio MCP server for view_exact.sh: one tool, `run`, that appends the exact
arguments it receives to the file named by argv[1] (one JSON line each) and answers."""
import json
import sys

log = sys.argv[1]
TOOL = {"name": "run", "description": "runs a command",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}}}
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m:
        continue
    meth, res = m.get("method"), None
    if meth == "initialize":
        res = {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
               "serverInfo": {"name": "view-exact", "version": "1"}}
    elif meth == "tools/list":
        res = {"tools": [TOOL]}
    elif meth == "tools/call":
        with open(log, "a") as f:
            f.write(json.dumps(m["params"].get("arguments")) + "\n")
        res = {"content": [{"type": "text", "text": "ran"}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": res}) + "\n")
    sys.stdout.flush()
