#!/usr/bin/env bash
# make bench: a witness's cosignature round trip (issue 31), as the daemon logs it: from the
# add-checkpoint request handed to the notify worker to the cosignature stored beside the
# checkpoint (the worker's POST, the witness's checks and signature, the answer read in the
# jail, the Ed25519 check in the signer, the LMDB write). The witness is the tests' own
# (tests/witness/witness.py, Python, with `cryptography`); a production witness answers over a
# network instead. Beside it, in the same run: the proof the request carries (made from the
# ledger's tiles, timed by ledger_bench) is not in this figure, and the disk's sync floor
# (write + fdatasync of 4 KiB), which the cosignature's own commit pays. Figures only.
# Usage: witness_bench.sh BUILD [ROUNDS]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-20}
ASSENT=$BUILD/assent ASSENTD=$BUILD/assentd PY=/usr/bin/python3 WIT=$ROOT/tests/witness/witness.py
mkdir -p "$BUILD/bench"
T=$(mktemp -d "$BUILD/bench/wbench.XXXXXX") # on the build's disk: /tmp may be a tmpfs, whose syncs cost nothing
S=$T/state
WPID= DPID=
trap 'kill $WPID $DPID 2>/dev/null; rm -rf "$T"' EXIT
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 400); do "$@" && return 0; sleep 0.05; done; return 1; }
mkdir -p "$S" && chmod 700 "$S"
printf 'default allow\n' >"$T/p.policy"
# Requests come from this uid, the daemon's own: single-user mode, and a policy that allows.
"$ASSENT" --state "$S" agent add bench --uid "$(id -u)" >/dev/null
start() {
	ASSENT_SINGLE_USER=1 FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off "$@" "$ASSENTD" --state "$S" --policy "$T/p.policy" >>"$T/d.log" 2>&1 &
	DPID=$!
	wait_for test -S "$S/agent.sock" || { echo "witness_bench: assentd did not start: $(tail -2 "$T/d.log")"; exit 1; }
}
start env # once, for the key and the origin
kill $DPID && wait $DPID 2>/dev/null
rm -f "$S/assentd.json" "$S/agent.sock"
ORIGIN=$(sed -n 1p "$S/ledger/checkpoint")
P=$(free_port)
V=$($PY "$WIT" vkey --key "$T/w.key" --name bench.example/witness)
$PY "$WIT" serve --key "$T/w.key" --name bench.example/witness --port "$P" --state "$T/w.json" \
	--log-key "$S/keys/checkpoint.pub" --origin "$ORIGIN" --prefix / 2>>"$T/w.log" &
WPID=$!
wait_for grep -q listening "$T/w.log" || { echo "witness_bench: the witness did not start"; exit 1; }
printf '%s http://127.0.0.1:%s/\n' "$V" "$P" >"$T/witnesses"
start env ASSENT_WITNESSES="$T/witnesses"
for i in $(seq "$ROUNDS"); do
	"$ASSENT" --state "$S" request --message "bench $i" >/dev/null 2>&1
	"$ASSENT" --state "$S" ledger checkpoint >/dev/null 2>&1 # a periodic checkpoint: sent within a second
	n=$(sed -n 2p "$S/ledger/checkpoint")
	wait_for grep -q "cosigned checkpoint $n (round trip" "$T/d.log" || { echo "witness_bench: checkpoint $n was not cosigned"; exit 1; }
done
floor=$($PY - "$T" <<'PY'
import os, sys, time
fd = os.open(os.path.join(sys.argv[1], "sync"), os.O_WRONLY | os.O_CREAT, 0o600)
b = b"\0" * 4096
t = time.perf_counter()
for _ in range(200):
    os.pwrite(fd, b, 0)
    os.fdatasync(fd)
print("%.0f" % ((time.perf_counter() - t) / 200 * 1e6))
PY
)
$PY - "$T/d.log" "$floor" <<'PY'
import re, statistics, sys
us = [int(m.group(1)) for m in re.finditer(r"cosigned checkpoint \d+ \(round trip (\d+) us", open(sys.argv[1]).read())]
us.sort()
print("== a witness's cosignature round trip (issue 31): %d checkpoints, one witness (Python) ==" % len(us))
print("median %.1f ms, min %.1f ms, max %.1f ms (posted by the notify worker, checked and signed by the"
      " witness, read in the jail, verified and stored by the signer)" % (statistics.median(us) / 1e3, us[0] / 1e3, us[-1] / 1e3))
print("disk sync floor, write + fdatasync of 4 KiB: %s us" % sys.argv[2])
PY
