#!/usr/bin/env python3
"""Gated calls as MCP tasks (issue 15), over assentd's stdio bridge, 2025-11-25 tasks:
gateway_gate_tasks.py BUILD STATE POLICY UPSTREAMS CALL_LOG. Prints TAP lines (ok / not ok).
An allowed call asked as a task completes with the upstream's result; a held call is a task that
is working while it waits, is approved by a reviewer (assent approve, single-user), completes,
and tasks/result gives the upstream's own result with the gate's _meta and the related task; a
held call rejected ends with an isError result and nothing upstream; tasks/cancel of a held call
cancels it. Every gated tool is listed with execution.taskSupport "optional"."""
import json, os, subprocess, sys, time

build, state, policy, ups, log = sys.argv[1:6]
n = 0


def check(ok, what):
    global n
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what), flush=True)


p = subprocess.Popen([os.path.join(build, "assentd"), "--stdio", "--state", state, "--policy", policy,
                      "--upstreams", ups], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
got = {}
notes = []


def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode())
    p.stdin.flush()


def wait_id(i, secs=30):
    end = time.time() + secs
    while i not in got and time.time() < end:
        line = p.stdout.readline()
        if not line:
            break
        m = json.loads(line)
        if "id" in m and ("result" in m or "error" in m):
            got[m["id"]] = m
        else:
            notes.append(m)
    return got.get(i)


def assent(*args):
    return subprocess.run([os.path.join(build, "assent"), "--state", state] + list(args), capture_output=True,
                          text=True, env=dict(os.environ, ASSENT_SINGLE_USER="1"))


def pending_sid(tool):
    for _ in range(100):
        r = assent("pending", "--json")
        try:
            for x in json.loads(r.stdout or "[]"):
                if tool in x.get("message", ""):
                    return x["session_id"]
        except ValueError:
            pass
        time.sleep(0.05)
    return None


def calls():
    try:
        return open(log).read().splitlines()
    except OSError:
        return []


rid = [100]


def call(tool, args):
    rid[0] += 1
    send({"jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
          "params": {"name": tool, "arguments": args, "task": {"ttl": 600000}}})
    return wait_id(rid[0])


def task_get(tid):
    rid[0] += 1
    send({"jsonrpc": "2.0", "id": rid[0], "method": "tasks/get", "params": {"taskId": tid}})
    return (wait_id(rid[0]) or {}).get("result") or {}


def task_result(tid):
    rid[0] += 1
    send({"jsonrpc": "2.0", "id": rid[0], "method": "tasks/result", "params": {"taskId": tid}})
    return (wait_id(rid[0]) or {}).get("result") or {}


send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
      "capabilities": {"tasks": {}}, "clientInfo": {"name": "tasks-test", "version": "1"}}})
init = wait_id(1)
check(init and "result" in init, "initialize")
send({"jsonrpc": "2.0", "method": "notifications/initialized"})

# the upstream's tools say a spec client may make their calls tasks (a held call may wait long)
gated = []
for _ in range(200):
    rid[0] += 1
    send({"jsonrpc": "2.0", "id": rid[0], "method": "tools/list"})
    gated = [t for t in ((wait_id(rid[0]) or {}).get("result") or {}).get("tools", []) if "__" in t["name"]]
    if gated:
        break
    time.sleep(0.05)
check(gated and all((t.get("execution") or {}).get("taskSupport") == "optional" for t in gated),
      "every gated tool is listed with execution.taskSupport optional (%s)"
      % [(t["name"], t.get("execution")) for t in gated][:3])

# an allowed call asked as a task
r = call("fs__echo", {"text": "as a task"})
tid = ((r or {}).get("result") or {}).get("task", {}).get("taskId")
check(tid, "an allowed call asked as a task gets a task (%s)" % tid)
st = {}
for _ in range(100):
    st = task_get(tid)
    if st.get("status") == "completed":
        break
    time.sleep(0.05)
check(st.get("status") == "completed", "... it completes (%s)" % st.get("status"))
res = task_result(tid)
check(res.get("content", [{}])[0].get("text") == "as a task", "... tasks/result is the upstream's result")
meta = res.get("_meta") or {}
check(meta.get("io.assent/gate", {}).get("status") == "forwarded" and
      meta.get("io.modelcontextprotocol/related-task", {}).get("taskId") == tid,
      "... with the gate's facts and the related task in _meta")

# a held call: working, approved, completed, once upstream
before = len(calls())
r = call("fs__write_file", {"path": "task.txt", "content": "written by a task"})
tid = ((r or {}).get("result") or {}).get("task", {}).get("taskId")
check(tid and r["result"]["task"]["status"] == "working", "a held call is a working task")
sid = pending_sid("write_file")
check(sid == tid, "... pending for the reviewers under the task's id")
check(task_get(tid).get("status") == "working", "... tasks/get: working while it waits")
check(len(calls()) == before, "... nothing reached the upstream yet")
a = assent("approve", sid, "-m", "fine")
check(a.returncode == 0, "the reviewer approves it (%s)" % (a.stderr.strip() or "ok"))
for _ in range(100):
    st = task_get(tid)
    if st.get("status") == "completed":
        break
    time.sleep(0.05)
check(st.get("status") == "completed", "... the task completes")
res = task_result(tid)
check("wrote" in res.get("content", [{}])[0].get("text", ""), "... tasks/result is the upstream's result")
gm = res.get("_meta", {}).get("io.assent/gate", {})
check(gm.get("decision_seq"), "... with the decision's ledger seq")
tok = gm.get("approval_token", "")
claims = {}
if tok.count(".") == 2:
    import base64
    part = tok.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
check(claims.get("action") == gm.get("call") and str(gm.get("call", "")).startswith("sha256:") and
      claims.get("approved") is True and claims.get("session_id") == tid,
      "... and, as its rule says token yes, an approval token for the exact call (action %s)" % claims.get("action"))
v = subprocess.run([os.path.join(build, "assent-verify"), "token", tok, "--aud", claims.get("aud", ""), "--jwks",
                    os.path.join(state, "keys", "jwks.json")], capture_output=True, text=True)
check(v.returncode == 0, "... which assent-verify accepts (%s)" % (v.stderr.strip() or "ok"))
check(sum(1 for l in calls() if l.startswith("write_file")) == 1, "... forwarded once")
check(any(m.get("method") == "notifications/tasks/status" and m["params"].get("taskId") == tid and
          m["params"].get("status") == "completed" for m in notes), "... and the client heard it completed")

# rejected
r = call("fs__delete_files", {"paths": ["task.txt"]})
tid = ((r or {}).get("result") or {}).get("task", {}).get("taskId")
sid = pending_sid("delete_files")
a = assent("reject", sid, "-m", "keep it")
check(a.returncode == 0, "a held delete is rejected")
for _ in range(100):
    st = task_get(tid)
    if st.get("status") not in ("working", None):
        break
    time.sleep(0.05)
res = task_result(tid)
check(res.get("isError") is True and "keep it" in res.get("content", [{}])[0].get("text", ""),
      "... tasks/result is an isError result with the reviewer's reason")
check(not any(l.startswith("delete_files") for l in calls()), "... nothing reached the upstream")

# cancelled while held
r = call("fs__write_file", {"path": "never.txt", "content": "x"})
tid = ((r or {}).get("result") or {}).get("task", {}).get("taskId")
pending_sid("write_file")
rid[0] += 1
send({"jsonrpc": "2.0", "id": rid[0], "method": "tasks/cancel", "params": {"taskId": tid}})
c = wait_id(rid[0]) or {}
check((c.get("result") or {}).get("status") == "cancelled", "tasks/cancel of a held call: cancelled")
check(task_get(tid).get("status") == "cancelled", "... and it stays cancelled")
check(not any("never.txt" in l for l in calls()), "... nothing reached the upstream")
# 2026-07-28 on the same stdio connection (last: its requests carry their own capabilities): list changes are advertised,
# and heard on a subscriptions/listen stream, acknowledged at once (tests/integration/gate_listen.sh has the rest)
M26 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
       "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"}}
send({"jsonrpc": "2.0", "id": 2000, "method": "server/discover", "params": {"_meta": M26}})
caps = ((wait_id(2000) or {}).get("result") or {}).get("capabilities") or {}
send({"jsonrpc": "2.0", "id": 2001, "method": "subscriptions/listen",
      "params": {"_meta": M26, "notifications": {"toolsListChanged": True}}})
send({"jsonrpc": "2.0", "id": 2002, "method": "server/discover", "params": {"_meta": M26}})
wait_id(2002)  # answered after the listen's acknowledgement, which the stream keeps open (no answer of its own)
ack = [n for n in notes if n.get("method") == "notifications/subscriptions/acknowledged"]
check((caps.get("tools") or {}).get("listChanged") is True and 2001 not in got and ack and
      ack[0]["params"] == {"notifications": {"toolsListChanged": True},
                           "_meta": {"io.modelcontextprotocol/subscriptionId": 2001}},
      "2026-07-28 server/discover advertises tools.listChanged, and subscriptions/listen is acknowledged with it (%s, %s)"
      % (caps.get("tools"), ack[:1] or got.get(2001)))
check(not (caps.get("resources") or {}).get("subscribe"),
      "... and no resources/subscribe, which that revision does not have (%s)" % caps.get("resources"))

# the server's start-up roots/list (no call carries it) is answered with the entry's "roots"
roots = [json.loads(l.split(" ", 1)[1]) for l in calls() if l.startswith("roots/list ")]
want = [{"uri": "file://" + os.path.join(os.path.dirname(log), "root"), "name": os.path.join(os.path.dirname(log), "root")},
        {"uri": "file:///srv/a%20dir", "name": "/srv/a dir"}]
check(roots and roots[0].get("roots") == want, "the server's start-up roots/list is answered with the entry's roots (%s)"
      % (roots[:1],))
p.stdin.close()
p.wait(timeout=30)
print("1..%d" % n)
