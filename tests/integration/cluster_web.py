"""A reviewer's web session on a replica (cluster.sh, docs/cluster.md "Web sessions"): the
review listener of TMP/REPLICA, as its assentd.json names it.

  login REPLICA TOKEN   prints {"session", "csrf", "reviewer"} (exit 1 if refused)
  me REPLICA SESSION CSRF   exit 0 when the session is alice's there (/review/api/me), with that
                        CSRF token; 1 if not
  logout REPLICA SESSION CSRF   exit 0 when it ended it
argv[1] is TMP."""
import http.client, json, sys

tmp, op, replica = sys.argv[1:4]
host, port = json.load(open(f"{tmp}/{replica}/assentd.json"))["review"].rsplit(":", 1)


def req(method, path, body=None, secret=None, csrf=None):
    h = {"Origin": f"http://{host}:{port}"} if method == "POST" else {}
    if body is not None:
        h["Content-Type"] = "application/json"
    if secret:
        h["Authorization"] = f"Bearer {secret}"
    if csrf:
        h["X-CSRF-Token"] = csrf
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, {}


if op == "login":
    st, j = req("POST", "/review/api/login", {"token": sys.argv[4]})
    print(json.dumps({k: j.get(k) for k in ("session", "csrf", "reviewer")}))
    sys.exit(0 if st == 200 and j.get("session") else 1)
if op == "me":
    st, j = req("GET", "/review/api/me", secret=sys.argv[4])
    sys.exit(0 if st == 200 and j.get("reviewer") == "alice" and j.get("csrf") == sys.argv[5] else 1)
if op == "logout":
    st, j = req("POST", "/review/api/logout", {}, secret=sys.argv[4], csrf=sys.argv[5])
    sys.exit(0 if st == 200 else 1)
sys.exit(2)
