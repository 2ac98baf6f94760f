"""A small MCP server over stdio (newline-delimited JSON-RPC) for gateway_records.sh: the upstream
whose answers the call records are checked against. It declares serverInfo version 9.8.7 and
serves tools/list, ping and tools/call; everything else gets a -32601 error.
Tools:
  echo {text}        the text back (ok)
  reply {b64}        the CallToolResult whose JSON is base64(b64), exactly as given: lets a test
                     choose the result (structured content, isError, secrets only in the result)
                     without putting it in the arguments as plain text
  forbidden {}       never reached under the test's policy (denied)
  other {text, ...}  the text back, like echo, whatever else is given (a tool the test excludes
                     from the records in one run, and sends secrets in the arguments of in another)
Every call that reaches it is appended to the file UPSTREAM_CALL_LOG, one line `TOOL` each."""
import base64, json, os, sys

TOOLS = [
    {"name": "echo", "description": "the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "reply", "description": "the result given, base64 JSON",
     "inputSchema": {"type": "object", "properties": {"b64": {"type": "string"}}}},
    {"name": "forbidden", "description": "denied by the test's policy", "inputSchema": {"type": "object"}},
    {"name": "other", "description": "the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]


def answer(rid, result=None, error=None):
    m = {"jsonrpc": "2.0", "id": rid}
    if error is not None:
        m["error"] = error
    else:
        m["result"] = result
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def call(params):
    name, args = params.get("name"), params.get("arguments") or {}
    log = os.environ.get("UPSTREAM_CALL_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{name}\n")
    if name in ("echo", "other"):
        return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
    if name == "reply":
        return json.loads(base64.b64decode(args.get("b64", "")))
    if name == "forbidden":
        return {"content": [{"type": "text", "text": "forbidden reached"}]}
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    method, rid = m.get("method"), m.get("id")
    if rid is None:
        continue  # notifications
    if method == "initialize":
        answer(rid, {"protocolVersion": (m.get("params") or {}).get("protocolVersion", "2025-11-25"),
                     "capabilities": {"tools": {}}, "serverInfo": {"name": "records-upstream", "version": "9.8.7"}})
    elif method == "tools/list":
        answer(rid, {"tools": TOOLS})
    elif method == "ping":
        answer(rid, {})
    elif method == "tools/call":
        answer(rid, call(m.get("params") or {}))
    else:
        answer(rid, error={"code": -32601, "message": f"method not found: {method}"})
