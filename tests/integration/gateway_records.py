"""The call records end to end (issue 16), for gateway_records.sh, on one database backend: assentd
--upstreams in front of tests/integration/records_upstream.py, agents over stdio and HTTP, the rows
read back from the database (SQLite at STATE/calls.db, or PostgreSQL through psql) and the JSON lines.
TAP out, each line prefixed with the backend.

Usage: gateway_records.py CONFIG.json
CONFIG: {"build": DIR, "t": scratch DIR, "backend": "sqlite" | "postgresql" | "mariadb",
         "pg": {"conninfo": "host=... port=... user=...", "dir": DIR, "pgsh": tests/scripts/pg.sh},
         "my": {"dir": DIR, "mysh": tests/scripts/my.sh} (the server my.sh started in DIR),
         "refusals": true (also check that bad sample rates stop the daemon: backend-independent)}
Runs, each a daemon of its own (and for PostgreSQL a database of its own, so the seed's table names
and queries are used unchanged everywhere):
  meta      every call's row with its exact columns, gated and assent's own tools, over stdio and
            HTTP; soft errors (and that the client gets what the upstream sent); the JSON lines
  full      arguments and results kept and redacted at any depth (built-in keys and secret shapes,
            an operator key and an operator pattern); no secret anywhere in the database's files
            or the JSON lines; a meta-only tool keeps no payload
  off       no rows
  sampling  rates kept on ok calls (the seed's estimate query), failures always kept, exclusion
  queue     (PostgreSQL) a queue of 5 with the server stopped: calls unaffected, drops counted,
            the records written again once it is back
"""
import base64, http.client, json, os, queue, re, secrets, signal, sqlite3, string, subprocess, sys, threading, time

from taplib import done, ok, plan

cfg = json.load(open(sys.argv[1]))
B = cfg["build"]
T = cfg["t"]
BACK = cfg["backend"]
PGC = cfg.get("pg") or {}
MYC = cfg.get("my") or {}
if PGC:  # the server's conninfo without its database: each run names its own
    PGC["conninfo"] = " ".join(w for w in PGC["conninfo"].split() if not w.startswith("dbname="))
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "records_upstream.py")
PY = "/usr/bin/python3"
PSQL = "/usr/lib/postgresql/15/bin/psql"
WAIT = 60  # bounds a wait for something that should come; never what a check measures
UID = os.getuid()
MARK = "[REDACTED]"
POLICY = """# the records test's policy: rules are named by their line ("line 2" is the first)
allow upstream up tool echo
deny upstream up tool forbidden reason "never"
allow upstream up tool reply
allow upstream up tool other
default ask same-user ok
"""
RULE_ECHO, RULE_FORBIDDEN, RULE_REPLY = "line 2", "line 3", "line 4"
COLS = ("call_id, tool, upstream, outcome, ok, error_type, error_message, session_id, request_id, user_sub, "
        "caller_kind, client_id, identity, args_size, result_size, arguments, result, decision, rule, ledger_seq, "
        "sample_rate, server_version, duration_ms, started_at")
BASE_ENV = {k: v for k, v in os.environ.items()
            if not k.startswith("ASSENT_RECORD_") and k != "FEEDBACK_INSTRUMENTATION_MODE"}


def check(cond, desc):
    return ok(cond, f"{BACK}: {desc}")


def until(f, wait=WAIT, step=0.1):
    """f() once it is truthy, or its last value after wait seconds."""
    end = time.time() + wait
    while True:
        v = f()
        if v or time.time() > end:
            return v
        time.sleep(step)


def compact(x):
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False)


def b64(x):
    return base64.b64encode(json.dumps(x).encode()).decode()


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits


def rnd(n, alphabet=ALNUM):
    """n characters, random but for the last three: a digit and both cases (what every secret
    shape's tail needs), or for an AWS-style alphabet a digit and capitals."""
    return "".join(secrets.choice(alphabet) for _ in range(n - 3)) + ("7aZ" if alphabet == ALNUM else "7QZ")


# ---- the database a run writes ----

def mysql(db, sql, xml=False):
    """sql run in database db by MariaDB's root over my.sh's socket, as the recorder's session
    has it (ANSI_QUOTES: "key" is the column)."""
    return subprocess.run(["mariadb", "--no-defaults", f"--socket={MYC['dir']}/sock/my.sock", "-uroot", "--batch",
                           "--xml" if xml else "--skip-column-names", "-e",
                           f"SET SESSION sql_mode = 'ANSI_QUOTES'; USE {db}; {sql}"],
                          capture_output=True, text=True)


MY_INTS = {"id", "ok", "args_size", "result_size", "ledger_seq", "position"}
MY_REALS = {"duration_ms", "sample_rate"}


def my_rows(xml_text):
    """mariadb --xml's rows as dicts, NULL as None, numbers as the seed's columns have them."""
    import xml.etree.ElementTree as ET
    ns = "{http://www.w3.org/2001/XMLSchema-instance}nil"
    rows = []
    for row in ET.fromstring(xml_text).iter("row"):
        r = {}
        for f in row.iter("field"):
            k, v = f.get("name"), (None if f.get(ns) == "true" else (f.text or ""))
            r[k] = v if v is None else int(v) if k in MY_INTS else float(v) if k in MY_REALS else v
        rows.append(r)
    return rows


def psql(conninfo, sql):
    return subprocess.run([PSQL, conninfo, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True,
                          text=True)


class DB:
    def __init__(self, state, name):
        self.state = state
        self.conninfo = None
        if BACK == "postgresql":
            self.conninfo = f"{PGC['conninfo']} dbname={name}"
            r = psql(f"{PGC['conninfo']} dbname=postgres", f"CREATE DATABASE {name}")
            if r.returncode != 0:
                raise SystemExit(f"CREATE DATABASE {name}: {r.stderr}")

        self.my = None
        if BACK == "mariadb":
            self.my = name
            pw = open(f"{MYC['dir']}/password").read().strip()
            r = mysql("mysql", f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; "
                      f"GRANT ALL ON {name}.* TO 'assent'@'localhost'")
            if r.returncode != 0:
                raise SystemExit(f"CREATE DATABASE {name}: {r.stderr}")
            self.myurl = f"mysql://assent:{pw}@/{name}?socket={MYC['dir']}/sock/my.sock"

    def url(self):
        if self.my:
            return self.myurl
        return f"postgresql:{self.conninfo}" if self.conninfo else None

    def q(self, sql):
        """The rows of a query as dicts, or None when there is no database or table yet."""
        if BACK == "sqlite":
            path = f"{self.state}/calls.db"
            if not os.path.exists(path):
                return None
            c = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            c.row_factory = sqlite3.Row
            try:
                return [dict(r) for r in c.execute(sql)]
            except sqlite3.OperationalError:
                return None
            finally:
                c.close()
        if self.my:
            r = mysql(self.my, sql, xml=True)
            return my_rows(r.stdout) if r.returncode == 0 and r.stdout.strip() else None
        r = psql(self.conninfo, f"SELECT coalesce(json_agg(q), '[]'::json) FROM ({sql}) q")
        return json.loads(r.stdout) if r.returncode == 0 else None

    def raw(self, sql):
        """The rows of a query run exactly as written, as tuples of text."""
        if BACK == "sqlite":
            c = sqlite3.connect(f"file:{self.state}/calls.db?mode=ro", uri=True, timeout=10)
            try:
                return [tuple(str(v) for v in r) for r in c.execute(sql)]
            finally:
                c.close()
        if self.my:
            r = mysql(self.my, sql)
            return [tuple(l.split("\t")) for l in r.stdout.splitlines() if l] if r.returncode == 0 else []
        r = subprocess.run([PSQL, self.conninfo, "-Xq", "--csv", "-t", "-c", sql], capture_output=True, text=True)
        return [tuple(l.split(",")) for l in r.stdout.splitlines() if l] if r.returncode == 0 else []

    def calls(self, where=""):
        rows = self.q(f"SELECT {COLS} FROM ffb_tool_calls {where} ORDER BY id") or []
        for r in rows:
            r["ok"] = None if r["ok"] is None else bool(r["ok"])
            for k in ("identity", "arguments", "result"):
                if isinstance(r[k], str):
                    r[k] = json.loads(r[k])
        return rows

    def files(self):
        """What holds the database on disk: the SQLite files, or the whole PostgreSQL cluster (its
        write-ahead log included) with its server log, after a checkpoint."""
        if BACK == "sqlite":
            d = f"{self.state}/records"
            return [os.path.join(d, f) for f in os.listdir(d)]
        if self.my:  # the tables' files, InnoDB's redo log and the server's log
            # FLUSH TABLES alone leaves InnoDB's dirty pages (and, at innodb_flush_log_at_trx_commit=0,
            # the redo log) in memory: a marker just written was on no file under load. FOR EXPORT
            # writes each table's pages to its .ibd and the log to disk before it returns.
            names = [n for n in mysql(self.my, "SHOW TABLES").stdout.split() if n]
            if names:
                mysql(self.my, "FLUSH TABLES " + ", ".join(f'"{n}"' for n in names) + " FOR EXPORT; UNLOCK TABLES")
            out = [f"{MYC['dir']}/server.log"]
            for dp, _, fs in os.walk(f"{MYC['dir']}/data"):
                out += [os.path.join(dp, f) for f in fs]
            return out
        psql(self.conninfo, "CHECKPOINT")
        out = [f"{PGC['dir']}/server.log"]
        for dp, _, fs in os.walk(f"{PGC['dir']}/data"):
            out += [os.path.join(dp, f) for f in fs]
        return out


def holding(needles, files):
    """{needle: [the files whose bytes contain it]} for the needles found anywhere (each file read once)."""
    found = {}
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        for n in needles:
            if n.encode() in data:
                found.setdefault(n, []).append(f)
    return found


# ---- the daemon ----

def assent(state, *args):
    return subprocess.run([f"{B}/assent", "--state", state, *args], capture_output=True, text=True)


DAEMONS = []


class Daemon:
    def __init__(self, name, env=None, section=None, db=True):
        DAEMONS.append(self)
        self.name = name
        self.st = f"{T}/{BACK}-{name}"
        os.makedirs(self.st)
        self.pol = f"{self.st}.policy"
        self.ups = f"{self.st}.upstreams.json"
        self.calllog = f"{self.st}.upstream-calls.log"
        self.logf = f"{self.st}.log"
        with open(self.pol, "w") as f:
            f.write(POLICY)
        doc = {"mcpServers": {"up": {"command": PY, "args": [FIXTURE], "env": {"UPSTREAM_CALL_LOG": self.calllog}}}}
        if section is not None:
            doc["records"] = section
        with open(self.ups, "w") as f:
            json.dump(doc, f)
        assent(self.st, "reviewer", "add", "tester", "--uid", str(UID))
        self.key = assent(self.st, "agent", "add", "rec-agent").stdout.strip().splitlines()[-1]
        self.db = DB(self.st, f"rec_{name}") if db else None
        e = {**BASE_ENV, "ASSENT_SINGLE_USER": "1", **(env or {})}
        if self.db and self.db.url():
            e["ASSENT_RECORD_DATABASE"] = self.db.url()
        self.env = e
        self.p = subprocess.Popen([f"{B}/assentd", "--state", self.st, "--policy", self.pol, "--upstreams", self.ups],
                                  stdin=subprocess.DEVNULL, stdout=open(self.logf, "ab"), stderr=subprocess.STDOUT,
                                  env=e, start_new_session=True)
        self.up = until(lambda: self.p.poll() is None and "upstream up: 4 tools served" in self.log()
                        and assent(self.st, "status").returncode == 0, wait=30)
        info = json.load(open(f"{self.st}/assentd.json")) if self.up else {}
        self.http, self.review = info.get("http"), info.get("review")

    def log(self):
        try:
            return open(self.logf, errors="replace").read()
        except OSError:
            return ""

    def alive(self):
        return self.p.poll() is None and assent(self.st, "status").returncode == 0

    def metrics(self):
        host, port = self.review.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("GET", "/metrics")
        r = c.getresponse()
        t = r.read().decode()
        c.close()
        out = {}
        for line in t.splitlines():
            m = re.match(r"^(assent_records\w*|assent_events_total)(\{[^}]*\})? (\d+)$", line)
            if m:
                out[m[1] + (m[2] or "")] = int(m[3])
        return out

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()


# ---- agents ----

class Stdio:
    """An agent on an assentd --stdio bridge (the daemon's own uid: "uid:N")."""

    def __init__(self, d, name="rec-stdio", version="1.0"):
        self.p = subprocess.Popen([f"{B}/assentd", "--stdio", "--state", d.st, "--policy", d.pol, "--upstreams", d.ups],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env={**BASE_ENV, "ASSENT_SINGLE_USER": "1"})
        self.q = queue.Queue()
        self.n = 0
        threading.Thread(target=self._read, daemon=True).start()
        init = self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": name, "version": version}}, "init")
        self.server_version = (((init or {}).get("result") or {}).get("serverInfo") or {}).get("version")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            try:
                self.q.put(json.loads(line))
            except ValueError:
                pass
        self.q.put({"eof": True})

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def rpc(self, method, params, rid):
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        end = time.time() + WAIT
        while time.time() < end:
            try:
                m = self.q.get(timeout=max(0.01, end - time.time()))
            except queue.Empty:
                break
            if m.get("eof"):
                return None
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m
        return None

    def call(self, name, args, rid=None):
        if rid is None:
            self.n += 1
            rid = self.n
        return rid, self.rpc("tools/call", {"name": name, "arguments": args}, rid)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=WAIT)


class Http:
    """An agent over Streamable HTTP with the daemon's agent key ("agent:rec-agent")."""

    def __init__(self, d, name="rec-http", version="2.0"):
        self.host, port = d.http.rsplit(":", 1)
        self.port = int(port)
        self.key = d.key
        self.session = None
        self.n = 100
        m = self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": name, "version": version}}, "init")
        self.server_version = (((m or {}).get("result") or {}).get("serverInfo") or {}).get("version")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body):
        c = http.client.HTTPConnection(self.host, self.port, timeout=WAIT)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": f"Bearer {self.key}"}
        if self.session:
            h.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-11-25"})
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data = r.read().decode(errors="replace")
        self.session = self.session or r.getheader("Mcp-Session-Id")
        ctype = r.getheader("Content-Type") or ""
        c.close()
        if "text/event-stream" in ctype:
            return [json.loads(l[5:]) for l in data.splitlines() if l.startswith("data:") and l[5:].strip()]
        return [json.loads(data)] if data.strip() else []

    def rpc(self, method, params, rid):
        for m in self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}):
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m
        return None

    def call(self, name, args, rid=None):
        if rid is None:
            self.n += 1
            rid = self.n
        return rid, self.rpc("tools/call", {"name": name, "arguments": args}, rid)


def direct_reply(results):
    """What the fixture answers to reply calls when no gateway is in between: one process, each
    result asked for once, in order."""
    p = subprocess.Popen([PY, FIXTURE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = []
    for i, res in enumerate(results):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": {"name": "reply", "arguments": {"b64": b64(res)}}}) + "\n")
        p.stdin.flush()
        out.append(json.loads(p.stdout.readline()).get("result"))
    p.stdin.close()
    p.wait(timeout=WAIT)
    return out


def without_gate(res):
    """A result as the upstream made it: assent's facts out of its _meta (and _meta, when they were all)."""
    r = json.loads(json.dumps(res or {}))
    meta = r.get("_meta")
    if isinstance(meta, dict):
        meta.pop("io.assent/gate", None)
        if not meta:
            del r["_meta"]
    return r


def gate(m):
    return (((m or {}).get("result") or {}).get("_meta") or {}).get("io.assent/gate") or {}


def text_of(m):
    return "".join(c.get("text", "") for c in (((m or {}).get("result") or {}).get("content") or []))


def rid_text(rid):
    return json.dumps(rid)


def answer_size(m, structured=False):
    """The bytes of what the agent got for its call: the result's (or the error's) compact JSON; for
    assent's own tools answered by the signer, their structured result's."""
    x = m["result"] if "result" in m else m["error"]
    return len(compact(x["structuredContent"] if structured else x).encode())


def diff(row, want):
    """The columns of row that differ from want, as 'col=got (want)'."""
    bad = [f"{k}={row.get(k)!r} (want {v!r})" for k, v in want.items() if row.get(k) != v]
    return "; ".join(bad)


def wait_rows(db, n, where=""):
    return until(lambda: (lambda r: r if len(r) >= n else None)(db.calls(where))) or db.calls(where)


# ---- meta: the exact columns of every kind of call ----

SOFT = [  # (result the upstream returns, outcome, error message of the row)
    ({"content": [{"type": "text", "text": "{\"status\":\"failed\",\"error\":\"disk full\"}"}],
      "structuredContent": {"status": "failed", "error": "disk full"}}, "soft_error", "status=failed: disk full"),
    ({"content": [{"type": "text", "text": "{\"ok\":false}"}], "structuredContent": {"ok": False}},
     "soft_error", "ok=false"),
    ({"content": [{"type": "text", "text": "it broke"}], "isError": True}, "soft_error", "it broke"),
    ({"content": [{"type": "text", "text": "{\"state\":\"FAILURE\",\"message\":\"quota exceeded\"}"}]},
     "soft_error", "state=FAILURE: quota exceeded"),
    ({"content": [{"type": "text", "text": "x"}], "structuredContent": {"success": False, "reason": "no route"}},
     "soft_error", "no route"),
    ({"content": [{"type": "text", "text": "x"}], "structuredContent": {"status": "unknown_target"}},
     "soft_error", "status=unknown_target"),  # ASSENT_RECORD_SOFT_STATUSES
    ({"content": [{"type": "text", "text": "done"}], "structuredContent": {"status": "done", "ok": True}},
     "ok", None),
]


def run_meta():
    jsonl = f"{T}/{BACK}-meta.jsonl"
    d = Daemon("meta", env={"ASSENT_RECORD_JSONL": jsonl, "ASSENT_RECORD_SOFT_STATUSES": "unknown_target"})
    if not check(d.up, f"meta: the daemon serves the upstream's tools, recording in mode meta (log: "
                       f"{d.log()[-300:] if not d.up else 'ok'})"):
        d.stop()
        return
    a = Stdio(d)
    ver = a.server_version
    who = {"session_id": None, "user_sub": f"uid:{UID}", "caller_kind": "uid", "client_id": "rec-stdio/1.0",
           "server_version": ver, "sample_rate": None, "arguments": None, "result": None}
    made = []  # (rid, args, answer, expected columns)

    def mk(agent, name, args, want, rid=None, structured=False):
        rid, m = agent.call(name, args, rid)
        made.append((rid, args, m, dict(want, structured=structured)))
        return m

    m = mk(a, "up__echo", {"text": "hello"}, {"tool": "up__echo", "upstream": "up", "outcome": "ok", "ok": True,
                                               "error_type": None, "error_message": None, "decision": "forwarded",
                                               "rule": RULE_ECHO})
    check(text_of(m) == "hello", f"meta: a gated echo is answered ({text_of(m)!r})")
    m = mk(a, "up__forbidden", {}, {"tool": "up__forbidden", "upstream": "up", "outcome": "error", "ok": False,
                                    "error_type": "Denied", "decision": "denied", "rule": RULE_FORBIDDEN,
                                    "error_message": "denied by the policy (rule 3): never; the call was not forwarded"})
    check(gate(m).get("status") == "denied", "meta: the denied call is refused by the policy")
    mk(a, "request_feedback", {"type": "approval", "message": "records test", "wait": False},
       {"tool": "request_feedback", "upstream": None, "outcome": "ok", "ok": True, "error_type": None,
        "error_message": None, "decision": None, "rule": None, "ledger_seq": None}, structured=True)
    mk(a, "list_pending_feedback", {}, {"tool": "list_pending_feedback", "upstream": None, "outcome": "ok", "ok": True,
                                        "error_type": None, "decision": None, "ledger_seq": None}, structured=True)
    m = mk(a, "request_feedback", {"type": "bogus"},
           {"tool": "request_feedback", "upstream": None, "outcome": "error", "ok": False, "error_type": "ToolError",
            "decision": None, "ledger_seq": None})
    refusal = text_of(m)
    made[-1][3]["error_message"] = refusal
    check(m and m["result"].get("isError") and "bogus" in refusal,
          f"meta: request_feedback with a bad type is refused ({refusal[:80]!r})")
    m = mk(a, "nosuch", {}, {"tool": "nosuch", "upstream": None, "outcome": "error", "ok": False,
                             "error_type": "ProtocolError", "decision": None, "ledger_seq": None})
    made[-1][3]["error_message"] = f"{(m or {}).get('error', {}).get('code')}: {(m or {}).get('error', {}).get('message')}"
    check(m and "error" in m, f"meta: an unknown tool is a JSON-RPC error ({json.dumps(m)[:100]})")
    mk(a, "up__echo", {"text": "a string id"}, {"tool": "up__echo", "upstream": "up", "outcome": "ok", "ok": True,
                                                "decision": "forwarded", "rule": RULE_ECHO}, rid="str-8")
    # soft errors through the gate, and what the upstream sends when nothing is in between
    got = []
    for res, outcome, msg in SOFT:
        m = mk(a, "up__reply", {"b64": b64(res)}, {"tool": "up__reply", "upstream": "up", "outcome": outcome,
                                                   "ok": outcome == "ok", "error_type": "SoftError" if msg else None,
                                                   "error_message": msg, "decision": "forwarded", "rule": RULE_REPLY})
        got.append(without_gate((m or {}).get("result")))
    direct = direct_reply([r for r, _, _ in SOFT])
    same = [i for i in range(len(SOFT)) if got[i] == direct[i]]
    check(len(same) == len(SOFT), f"meta: soft errors: the agent gets exactly what the upstream answers "
                                  f"directly ({len(same)} of {len(SOFT)} identical; first differing: "
                                  f"{next(((got[i], direct[i]) for i in range(len(SOFT)) if i not in same), None)})")
    a.close()

    h = Http(d)
    whoh = dict(who, session_id=h.session, user_sub="agent:rec-agent", caller_kind="key")
    nstdio = len(made)
    m = mk(h, "up__echo", {"text": "over http"}, {"tool": "up__echo", "upstream": "up", "outcome": "ok", "ok": True,
                                                  "decision": "forwarded", "rule": RULE_ECHO})
    check(text_of(m) == "over http" and h.session, f"meta: HTTP: a gated echo with the agent key is answered "
                                                   f"(session {h.session})")
    mk(h, "request_feedback", {"type": "approval", "message": "over http", "wait": False},
       {"tool": "request_feedback", "upstream": None, "outcome": "ok", "ok": True, "decision": None}, structured=True)
    m = mk(h, "nosuch", {"x": 1}, {"tool": "nosuch", "upstream": None, "outcome": "error", "ok": False,
                                   "error_type": "ProtocolError"})
    made[-1][3]["error_message"] = f"{(m or {}).get('error', {}).get('code')}: {(m or {}).get('error', {}).get('message')}"

    rows = wait_rows(d.db, len(made))
    check(len(rows) == len(made), f"meta: one row per tools/call ({len(rows)} rows for {len(made)} calls)")
    by_rid = {}
    for r in rows:
        by_rid.setdefault(r["request_id"], []).append(r)
    stdio_sid = f"stdio:{rows[0]['session_id'].split(':')[1]}" if rows and (rows[0]["session_id"] or "").startswith(
        "stdio:") else "stdio:?"
    # the client the HTTP session declared: the signer's record of it (clientInfo of its initialize)
    for i, (rid, args, m, want) in enumerate(made):
        base = dict(who if i < nstdio else whoh)
        if i < nstdio:
            base["session_id"] = stdio_sid
        else:
            base["client_id"] = "rec-http/2.0"
        w = {**base, **want, "request_id": rid_text(rid), "args_size": len(compact(args).encode())}
        structured = w.pop("structured")
        if m is not None:
            w["result_size"] = answer_size(m, structured)
        g = gate(m)
        if want.get("upstream"):
            w["ledger_seq"] = g.get("outcome_seq") or g.get("decision_seq")
        r = (by_rid.get(rid_text(rid)) or [{}])[0]
        bad = diff(r, w)
        check(r and not bad and len(by_rid.get(rid_text(rid))) == 1,
              f"meta: the row of {'stdio' if i < nstdio else 'HTTP'} call {rid} ({want['tool']}, {want['outcome']}) "
              f"has the exact columns{': ' + bad if bad else ''}")
    ident = [r["identity"] for r in rows if r["caller_kind"] == "uid"]
    check(ident and all(x.get("uid") == UID and x.get("pid") == a.p.pid for x in ident),
          f"meta: stdio rows carry the measured uid and the bridge's pid as identity ({ident[:1]}, bridge {a.p.pid})")
    ids = [r["call_id"] for r in rows]
    check(len(set(ids)) == len(ids) and all(re.fullmatch(r"c[0-9a-f]{16}", x or "") for x in ids),
          f"meta: call_ids are unique, c + 16 hex ({ids[:2]})")
    check(all(isinstance(r["duration_ms"], (int, float)) and r["duration_ms"] >= 0 and r["started_at"] for r in rows),
          "meta: every row has its start time and a duration")
    if BACK == "sqlite":
        check(os.path.islink(f"{d.st}/calls.db") and os.readlink(f"{d.st}/calls.db") == "records/calls.db"
              and os.path.exists(f"{d.st}/records/calls.db"),
              "meta: the default database is STATE/records/calls.db, STATE/calls.db a link to it")
    # the JSON lines
    def parsed(ls):
        out = []
        for l in ls:
            try:
                out.append(json.loads(l))
            except ValueError:
                out.append({"unparsed": l[:80]})
        return out

    # Calls and events share the JSON lines: each line says which it is.
    lines = until(lambda: (lambda ls: ls if len([j for j in parsed(ls) if j.get("record") == "tool_call"]) >= len(rows)
                           else None)([l for l in open(jsonl) if l.strip()] if os.path.exists(jsonl) else []),
                  wait=10) or []
    every = parsed(lines)
    js = [j for j in every if j.get("record") == "tool_call"]
    check(len(js) == len(made) and all(j.get("record") in ("tool_call", "event") for j in every),
          f"meta: JSON lines: one line per call, each \"record\": \"tool_call\", events \"record\": \"event\" "
          f"({len(js)} call lines for {len(made)} calls, {len(every) - len(js)} events)")
    dbv = {r["call_id"]: r for r in rows}
    keys = ("tool", "upstream", "outcome", "ok", "error_type", "error_message", "session_id", "request_id",
            "user_sub", "caller_kind", "client_id", "args_size", "result_size", "decision", "rule", "ledger_seq",
            "sample_rate", "server_version")
    bad = [(j.get("call_id"), k, j.get(k), dbv.get(j.get("call_id"), {}).get(k)) for j in js for k in keys
           if j.get(k) != dbv.get(j.get("call_id"), {}).get(k)]
    check(js and not bad, f"meta: ... with the same call_ids and columns as the database's rows ({bad[:3]})")
    mt = until(lambda: (lambda m: m if m.get('assent_records_total{to="written"}') == len(rows) else None)(
        d.metrics()), wait=10) or d.metrics()  # the recorder tells the signer its counts once a second
    check(mt.get('assent_records_total{to="written"}') == len(rows) and
          mt.get('assent_records_total{to="recorder"}') == len(rows) and
          mt.get('assent_records_dropped_total{where="signer"}') == 0 and
          mt.get('assent_records_dropped_total{where="recorder"}') == 0,
          f"meta: /metrics: {len(rows)} written, none dropped ({mt})")
    d.stop()


# ---- full: payloads kept, redacted everywhere ----

def run_full():
    jsonl = f"{T}/{BACK}-full.jsonl"
    s = {  # every secret: found anywhere written means a leak
        "jwt": "eyJ" + rnd(20) + ".eyJ" + rnd(30) + "." + rnd(40),
        "bearer": "abc123" + rnd(24),
        "sk": "sk-" + rnd(32),
        "ghp": "ghp_" + rnd(36),
        "xoxb": "xoxb-" + "1234567890-" + rnd(16),
        "akia": "AKIA" + rnd(16, UPPER),
        "pypi": "pypi-AgE" + rnd(40),
        "pwtext": "hunter2" + rnd(16),
        "password": "pwval" + rnd(20),
        "token": "tokval" + rnd(20),
        "authorization": "authval" + rnd(20),
        "client_secret": "csval" + rnd(20),
        "x_api_key": "apikeyval" + rnd(20),
        "license": "licval" + rnd(20),
        "acme": "acme_" + rnd(32),
        "r_password": "rpwval" + rnd(20),
        "r_client_secret": "rcsval" + rnd(20),
        "r_sk": "sk-" + rnd(30),
        "r_bearer": "r9" + rnd(30),
        "r_acme": "acme_" + rnd(32),
        "e_pw": "epw" + rnd(18),
        "e_sk": "sk-" + rnd(28),
        "e_akia": "AKIA" + rnd(16, UPPER),
        "e_xoxb": "xoxb-" + rnd(20),
        "e_ghp": "ghp_" + rnd(36),
        "f_token": "ftok" + rnd(20),
        "f_cs": "fcs" + rnd(20),
        "f_bearer": "fb7" + rnd(26),
        "m_secret": "msec" + rnd(20),
    }
    mark_a, mark_r = "argsmarker" + secrets.token_hex(8), "resultmarker" + secrets.token_hex(8)
    args = {
        "marker": mark_a,
        "password": s["password"],
        "nested": {"deeper": [{"keep": "fine"}, {"level": {"token": s["token"]}},
                              {"headers": {"authorization": s["authorization"]}}],
                   "client_secret": s["client_secret"], "svc": {"conf": {"x_api_key": s["x_api_key"]}}},
        "license": s["license"],
        "text": "short",
        "prose": (f"jwt {s['jwt']} then Bearer {s['bearer']} and {s['sk']} {s['ghp']} {s['xoxb']} {s['akia']} "
                 f"{s['pypi']} {s['acme']} password={s['pwtext']}"),
    }
    result = {"content": [{"type": "text", "text": f"secret-free text {mark_r}"}],
              "structuredContent": {"status": "ok", "marker": mark_r,
                                    "creds": {"password": s["r_password"],
                                              "deep": {"list": [{"client_secret": s["r_client_secret"]}]}},
                                    "note": f"use {s['r_sk']} with Bearer {s['r_bearer']} for {s['r_acme']}"}}
    soft = {"content": [{"type": "text", "text": "x"}],
            "structuredContent": {"status": "failed", "error": f"login failed: password={s['e_pw']}"}}
    iserr = {"content": [{"type": "text", "text": f"crashed with {s['e_akia']} and {s['e_xoxb']} near {s['e_ghp']}"}],
             "isError": True}
    d = Daemon("full", env={"FEEDBACK_INSTRUMENTATION_MODE": "full", "ASSENT_RECORD_REDACT_KEYS": "license",
                            "ASSENT_RECORD_META_ONLY_TOOLS": "up__echo", "ASSENT_RECORD_JSONL": jsonl},
               section={"redact_patterns": ["acme_[A-Za-z0-9]{32}"]})
    if not check(d.up, f"full: the daemon starts in mode full ({d.log()[-300:] if not d.up else 'ok'})"):
        d.stop()
        return
    a = Stdio(d)
    # (arguments and result in calls of their own: a row over 2 kB would be compressed by PostgreSQL,
    # and a search of its files would then find nothing, secrets or not)
    rid_args, m = a.call("up__other", args)
    check(text_of(m) == "short", f"full: a call with secrets in its arguments is answered ({text_of(m)!r})")
    rid_main, m = a.call("up__reply", {"b64": b64(result)})
    check(m and m["result"].get("structuredContent", {}).get("creds", {}).get("password") == s["r_password"],
          "full: the agent gets the upstream's result with its secrets untouched (the record is what is redacted)")
    rid_soft, _ = a.call("up__reply", {"b64": b64(soft)})
    rid_iserr, _ = a.call("up__reply", {"b64": b64(iserr)})
    rid_fb, _ = a.call("request_feedback", {"type": "approval", "message": f"deploy with token={s['f_token']}",
                                            "context": {"client_secret": s["f_cs"], "note": f"Bearer {s['f_bearer']}"},
                                            "wait": False})
    rid_bad, m = a.call("request_feedback", {"type": s["e_sk"]})
    check(s["e_sk"] in text_of(m), "full: a refusal that quotes the secret it was given (the agent sees it)")
    rid_echo, _ = a.call("up__echo", {"text": f"meta only {s['m_secret']}"})
    a.close()
    rows = wait_rows(d.db, 7)
    r = {x["request_id"]: x for x in rows}
    ga = r.get(rid_text(rid_args), {}).get("arguments") or {}
    gr = r.get(rid_text(rid_main), {}).get("result") or {}
    nest = ga.get("nested") or {}
    check(ga.get("marker") == mark_a and ga.get("password") == MARK and
          nest.get("deeper", [{}])[0] == {"keep": "fine"} and
          (nest.get("deeper") + [{}, {}, {}])[1].get("level", {}).get("token") == MARK and
          (nest.get("deeper") + [{}, {}, {}])[2].get("headers", {}).get("authorization") == MARK and
          nest.get("client_secret") == MARK and nest.get("svc", {}).get("conf", {}).get("x_api_key") == MARK,
          f"full: arguments are kept with secret keys redacted at any depth (password, token, authorization, "
          f"client_secret, x_api_key): {compact(ga)[:300]}")
    check(ga.get("license") == MARK, f"full: ... and the operator's key (ASSENT_RECORD_REDACT_KEYS=license): "
                                     f"{ga.get('license')!r}")
    txt = ga.get("prose") or ""
    check(txt.count(MARK) == 9 and "Bearer " + MARK in txt and "password=" + MARK in txt,
          f"full: ... secret-shaped values in text replaced (JWT, Bearer, sk-, ghp_, xoxb-, AKIA, pypi-AgE, the "
          f"operator's pattern acme_..., password=): {txt!r}")
    check(gr.get("marker") == mark_r and (gr.get("creds") or {}).get("password") == MARK and
          ((((gr.get("creds") or {}).get("deep") or {}).get("list") or [{}])[0]).get("client_secret") == MARK and
          (gr.get("note") or "").count(MARK) == 3,
          f"full: the result is kept redacted the same way (keys at any depth, values in text): {compact(gr)[:300]}")
    rs = r.get(rid_text(rid_soft), {})
    check(rs.get("outcome") == "soft_error" and rs.get("error_message") == f"status=failed: login failed: password={MARK}",
          f"full: a soft error's message is redacted ({rs.get('error_message')!r})")
    ri = r.get(rid_text(rid_iserr), {})
    check(ri.get("outcome") == "soft_error" and (ri.get("error_message") or "").count(MARK) == 3,
          f"full: isError text with secret shapes: redacted in error_message ({ri.get('error_message')!r})")
    rf = r.get(rid_text(rid_fb), {})
    fa = rf.get("arguments") or {}
    check(fa.get("message") == f"deploy with token={MARK}" and (fa.get("context") or {}).get("client_secret") == MARK
          and (fa.get("context") or {}).get("note") == f"Bearer {MARK}",
          f"full: assent's own tool's arguments are redacted too ({compact(fa)[:200]})")
    rb = r.get(rid_text(rid_bad), {})
    check(rb.get("error_type") == "ToolError" and MARK in (rb.get("error_message") or ""),
          f"full: a refusal's error text is redacted ({rb.get('error_message')!r})")
    re_ = r.get(rid_text(rid_echo), {})
    check(re_ and re_.get("arguments") is None and re_.get("result") is None and re_.get("args_size", 0) > 0,
          f"full: a meta_only tool (ASSENT_RECORD_META_ONLY_TOOLS=up__echo) keeps sizes, no arguments or result "
          f"({ {k: re_.get(k) for k in ('arguments', 'result', 'args_size')} })")
    dbfiles = d.db.files()
    found = holding(list(s.values()), dbfiles + [jsonl])
    leaks = {k: found[v] for k, v in s.items() if v in found}
    in_db, in_jsonl = holding([mark_a, mark_r], dbfiles), holding([mark_a, mark_r], [jsonl])
    seen = [mk for mk in (mark_a, mark_r) if mk in in_db and mk in in_jsonl]
    check(len(seen) == 2, f"full: the search finds what was stored: both markers are in the database's files and "
                          f"the JSON lines ({len(seen)} of 2; {len(dbfiles)} database files)")
    check(not leaks, f"full: none of the {len(s)} secrets is in the database's files or the JSON lines "
                     f"(found: {leaks})")
    d.stop()


# ---- off ----

def run_off():
    d = Daemon("off", env={"FEEDBACK_INSTRUMENTATION_MODE": "off"})
    if not check(d.up, "off: the daemon starts with recording off"):
        d.stop()
        return
    a = Stdio(d)
    answers = [a.call("up__echo", {"text": f"off {i}"})[1] for i in range(3)] + [a.call("list_pending_feedback", {})[1]]
    a.close()
    check(all(answers) and text_of(answers[0]) == "off 0", "off: calls are answered")
    rows = d.db.calls()
    mt = d.metrics()
    kids = subprocess.run(["ps", "-o", "args=", "--ppid", str(d.p.pid)], capture_output=True, text=True).stdout
    sent = mt.get('assent_records_total{to="recorder"}', 0) + mt.get('assent_records_dropped_total{where="signer"}', 0)
    check(rows == [] and sent == 0 and "assent-recorder" not in kids and "assent-worker mcp" in kids,
          f"off: no rows ({len(rows)}), no recorder running, no record sent or dropped ({sent})")
    d.stop()


# ---- sampling and exclusion ----

def run_sampling():
    d = Daemon("sampling", env={"ASSENT_RECORD_SAMPLE_RATES": "up__echo=0.5,up__reply=0.5,up__forbidden=0.5",
                                "ASSENT_RECORD_EXCLUDE_TOOLS": "list_pending_feedback,up__other"})
    if not check(d.up, "sampling: the daemon starts with sample rates and excluded tools"):
        d.stop()
        return
    a = Stdio(d)
    good = sum(1 for i in range(200) if text_of(a.call("up__echo", {"text": f"n{i}"})[1]) == f"n{i}")
    fail = {"content": [{"type": "text", "text": "x"}], "structuredContent": {"status": "failed", "error": "no"}}
    soft = [a.call("up__reply", {"b64": b64(fail)})[1] for _ in range(10)]
    denied = [a.call("up__forbidden", {})[1] for _ in range(10)]
    excl = [a.call("list_pending_feedback", {})[1] for _ in range(5)] + [a.call("up__other", {"text": "o"})[1]
                                                                       for _ in range(5)]
    rid_end, _ = a.call("nosuch", {}, rid="sentinel")  # always kept, and the last: once it is written all are
    a.close()
    check(good == 200 and all(soft) and all(denied) and all(excl) and text_of(excl[-1]) == "o",
          f"sampling: every call is answered ({good} of 200 echoes right, excluded tools answered)")
    until(lambda: d.db.calls(f"WHERE request_id = '{rid_text(rid_end)}'"))
    rows = d.db.calls()
    echo = [r for r in rows if r["tool"] == "up__echo"]
    check(60 <= len(echo) <= 140 and all(r["sample_rate"] == 0.5 for r in echo),
          f"sampling: about half of 200 ok calls at rate 0.5 are kept ({len(echo)}), each with sample_rate 0.5 "
          f"({sorted({r['sample_rate'] for r in echo}, key=str)})")
    kept = [r for r in rows if r["tool"] in ("up__reply", "up__forbidden")]
    check(len(kept) == 20 and all(r["sample_rate"] is None and not r["ok"] for r in kept),
          f"sampling: failures of sampled tools are all kept, with no sample_rate ({len(kept)} of 20: "
          f"{sorted({(r['outcome'], r['sample_rate']) for r in kept}, key=str)})")
    check(not [r for r in rows if r["tool"] in ("list_pending_feedback", "up__other")],
          "sampling: excluded tools have no row (ASSENT_RECORD_EXCLUDE_TOOLS)")
    est = {t: float(n) for t, n in d.db.raw(
        "SELECT tool, SUM(1.0 / COALESCE(sample_rate, 1)) AS est_calls FROM ffb_tool_calls GROUP BY tool;")}
    check(100 <= est.get("up__echo", 0) <= 300 and est.get("up__reply") == 10 and est.get("up__forbidden") == 10,
          f"sampling: the seed's estimate query, unchanged: {est}")
    d.stop()


def run_refusals():
    cases = [({"ASSENT_RECORD_SAMPLE_RATES": "up__echo=1.5"}, None, "ASSENT_RECORD_SAMPLE_RATES"),
             ({"ASSENT_RECORD_SAMPLE_RATES": "up__echo=0"}, None, "ASSENT_RECORD_SAMPLE_RATES"),
             ({"ASSENT_RECORD_SAMPLE_RATES": "up__echo=abc"}, None, "ASSENT_RECORD_SAMPLE_RATES"),
             ({}, {"sample_rates": {"up__echo": 2}}, "records.sample_rates")]
    for i, (env, section, name) in enumerate(cases):
        st = f"{T}/{BACK}-refused-{i}"
        os.makedirs(st)
        ups = f"{st}.json"
        doc = {"mcpServers": {"up": {"command": PY, "args": [FIXTURE]}}}
        if section:
            doc["records"] = section
        with open(ups, "w") as f:
            json.dump(doc, f)
        try:
            r = subprocess.run([f"{B}/assentd", "--state", st, "--upstreams", ups], capture_output=True, text=True,
                               env={**BASE_ENV, "ASSENT_SINGLE_USER": "1", **env}, timeout=30)
            rc, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = "still running after 30 s", str(e.stdout or "")
        what = env.get("ASSENT_RECORD_SAMPLE_RATES") or json.dumps(section)
        said = [l for l in out.splitlines() if name in l]
        check(isinstance(rc, int) and rc != 0 and said and "(0, 1]" in said[0],
              f"a bad rate ({what}) refuses to start, naming {name}: exit {rc}: {said[:1] or out[-200:]}")


# ---- queue: PostgreSQL or MariaDB stopped mid-run ----

def run_queue():
    d = Daemon("queue", env={"ASSENT_RECORD_QUEUE": "5"})
    if not check(d.up, "queue: the daemon starts with ASSENT_RECORD_QUEUE=5"):
        d.stop()
        return
    a = Stdio(d)
    a.call("up__echo", {"text": "before"}, rid="before")
    check(until(lambda: d.db.calls("WHERE request_id = '\"before\"'")), "queue: a call before the stop is written")
    sh, sdir = (MYC["mysh"], MYC["dir"]) if MYC else (PGC["pgsh"], PGC["dir"])
    r = subprocess.run([sh, "stop", sdir], capture_output=True, text=True)
    check(r.returncode == 0, f"queue: the database server stopped ({os.path.basename(sh)} stop: {r.stderr.strip()[:100]})")
    right = sum(1 for i in range(50) if text_of(a.call("up__echo", {"text": f"during {i}"})[1]) == f"during {i}")
    check(right == 50, f"queue: 50 calls while the database is down are all answered correctly ({right})")
    mt = until(lambda: (lambda m: m if m.get('assent_records_dropped_total{where="recorder"}', 0) > 0 and
                        m.get("assent_records_sink_failures_total", 0) > 0 else None)(d.metrics()), wait=30) or d.metrics()
    dropped = mt.get('assent_records_dropped_total{where="recorder"}', 0)
    check(dropped > 0 and mt.get("assent_records_sink_failures_total", 0) > 0 and mt.get("assent_records_queued", 99) <= 5,
          f"queue: /metrics counts the drops and the failing sink, at most 5 queued ({mt})")
    check(d.alive(), "queue: the daemon is alive")
    r = subprocess.run([sh, "resume", sdir], capture_output=True, text=True)
    check(r.returncode == 0, f"queue: the database server started again ({os.path.basename(sh)} resume: "
          f"{r.stderr.strip()[:100]})")
    # what waited in the queue is written at the next retry (backoff: at most 30 s)
    mt = until(lambda: (lambda m: m if m.get("assent_records_queued") == 0 and
                        m.get('assent_records_total{to="written"}', 0) + m.get(
                            'assent_records_dropped_total{where="recorder"}', 0) + m.get(
                            "assent_events_total", 0) >= 51 else None)(d.metrics()),
               wait=WAIT) or d.metrics()
    during = d.db.calls("WHERE request_id <> '\"before\"'")
    dropped = mt.get('assent_records_dropped_total{where="recorder"}', 0)
    # Events (call.dispatched, call.finished) share the queue: the drops count them too.
    check(mt.get("assent_records_queued") == 0 and len(during) + dropped >= 50 and 0 < len(during) <= 5,
          f"queue: once it is back the queued records are written ({len(during)}), the rest of the 50 were dropped "
          f"and counted ({dropped}, events with them); none queued now ({mt})")
    for i in range(3):
        a.call("up__echo", {"text": f"after {i}"}, rid=f"after-{i}")
    after = until(lambda: (lambda rs: rs if len(rs) == 3 else None)(d.db.calls("WHERE request_id LIKE '\"after-%'")),
                  wait=WAIT) or []
    check(len(after) == 3, f"queue: later calls are recorded again ({len(after)} of 3; /metrics: {d.metrics()})")
    a.close()
    d.stop()


RUNS = [run_meta, run_full, run_off, run_sampling]
if cfg.get("refusals"):
    RUNS.append(run_refusals)
if BACK in ("postgresql", "mariadb"):
    RUNS.append(run_queue)
only = os.environ.get("RECORDS_ONLY")  # for working on one run: RECORDS_ONLY=full
for run in RUNS:
    if only and run.__name__ != f"run_{only}":
        continue
    try:
        run()
    except Exception as e:  # a run that breaks is a failure, and the next run still goes
        import traceback
        traceback.print_exc()
        check(False, f"{run.__name__} stopped: {type(e).__name__}: {e}")
for d in DAEMONS:
    d.stop()
plan()
done()
