#!/usr/bin/env python3
"""A minimal stdio MCP server for view_exact.sh: two tools, `run` and `edit_file` (the
filesystem servers' {path, edits: [{oldText, newText}]}), that append the exact arguments
they receive to the file named by argv[1] (one JSON line each) and answer."""
import json
import sys

log = sys.argv[1]
TOOL = {"name": "run", "description": "runs a command",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}}}
EDIT = {"name": "edit_file", "description": "edits a file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array"}}}}
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
        res = {"tools": [TOOL, EDIT]}
    elif meth == "tools/call":
        with open(log, "a") as f:
            f.write(json.dumps(m["params"].get("arguments")) + "\n")
        res = {"content": [{"type": "text", "text": "ran"}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": res}) + "\n")
    sys.stdout.flush()
