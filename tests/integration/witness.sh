#!/usr/bin/env bash
# Witnesses (issue 31, the gateway's side): assentd sends each new periodic checkpoint to the
# C2SP tlog-witnesses of ASSENT_WITNESSES (add-checkpoint, with the consistency proof from
# each witness's size) and stores their verified cosignatures beside it. The witnesses are
# tests/witness/witness.py, written from the specifications with no code of assent's (its own
# Merkle, note and proof code; `cryptography` for Ed25519 and the log's ECDSA). Checked: two
# witnesses cosign (threshold two, verified here in Python); a witness that is down at first
# cosigns the checkpoint that waited once it is up; a checkpoint made on demand (`assent
# ledger checkpoint` beside the daemon) is cosigned with a consistency proof; after a restart
# the stored sizes are used, and without them (old 0) the witness's 409 gives its size, from
# which it is asked again (C2SP's recovery); a witness whose cosignature is forged is refused
# and nothing of it stored; a forked ledger (a second ledger under the same key) is refused cosignature and
# raises the alarm (an error line, /metrics, /health).
. "$(dirname "$0")/../lib.sh"
WIT=$ROOT/tests/witness/witness.py
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WPIDS=()
daemon_state
trap 'kill "${WPIDS[@]}" 2>/dev/null; _daemon_cleanup' EXIT
cat >"$T/p.policy" <<'POL'
default allow
POL
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" >/dev/null

# The checkpoint key and the origin, as a witness is configured with them: the daemon makes
# the key at its first start (stopped at once, before any witness is named).
ASSENT_SINGLE_USER=$(agent_single_user) daemon_start --policy "$T/p.policy"
daemon_listens "a first start makes the ledger and its key"
kill "$DPID"
for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json"
ORIGIN=$(sed -n 1p "$S/ledger/checkpoint")
check "the ledger has a periodic checkpoint and an origin ($ORIGIN)" test -n "$ORIGIN"

P1=$(free_port) P2=$(free_port) P3=$(free_port)
V1=$($PY "$WIT" vkey --key "$T/w1.key" --name w1.example/witness)
V2=$($PY "$WIT" vkey --key "$T/w2.key" --name w2.example/witness)
V3=$($PY "$WIT" vkey --key "$T/w3.key" --name w3.example/forger)
check "witness.py prints a C2SP vkey (NAME+KEYID+BASE64)" sh -c "printf '%s' '$V1' | grep -Eq '^w1.example/witness\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$'"
start_witness() { # N PORT NAME [--forge]
	$PY "$WIT" serve --key "$T/w$1.key" --name "$3" --port "$2" --state "$T/w$1.json" --log-key "$S/keys/checkpoint.pub" \
		--origin "$ORIGIN" --prefix "/w$1/" "${@:4}" 2>>"$T/w$1.log" &
	WPIDS+=($!)
	for _ in $(seq 100); do grep -q listening "$T/w$1.log" 2>/dev/null && break; sleep 0.05; done
}
printf '# two witnesses\n%s http://127.0.0.1:%s/w1/\n\n%s http://127.0.0.1:%s/w2\n' "$V1" "$P1" "$V2" "$P2" >"$T/witnesses"

# ---- configuration errors stop the start ----
printf '%s http://127.0.0.1:%s/w1/\n' "${V1%??????}AAAAAA" "$P1" >"$T/bad1"
ASSENT_WITNESSES=$T/bad1 ASSENT_SINGLE_USER=$(agent_single_user) timeout 20 "$ASSENTD" --state "$S" --policy "$T/p.policy" >"$T/bad.log" 2>&1
check "a vkey whose key is not its key ID's: assentd does not start" test $? -ne 0
check "  ... naming the line" grep -q "ASSENT_WITNESSES=$T/bad1: line 1:" "$T/bad.log"
printf '%s\n' "$V1" >"$T/bad2"
ASSENT_WITNESSES=$T/bad2 ASSENT_SINGLE_USER=$(agent_single_user) timeout 20 "$ASSENTD" --state "$S" --policy "$T/p.policy" >"$T/bad.log" 2>&1
check "a line without its URL: assentd does not start" grep -q "line 1: not VKEY URL" "$T/bad.log"
rm -f "$S/assentd.json"

# ---- two witnesses, one of them down at first ----
start_witness 1 "$P1" w1.example/witness
ASSENT_WITNESSES=$T/witnesses ASSENT_NOTIFY_BACKOFF_MS=100 ASSENT_SINGLE_USER=$(agent_single_user) \
	daemon_start --policy "$T/p.policy"
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
daemon_listens "assentd starts with two witnesses"
open_agent_sock "$S"
R=http://$(listener "$S" review)
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request --message "$1" >/dev/null 2>&1; }
# has_cosig NAME: the stored periodic checkpoint (DIR/checkpoint) carries NAME's line
has_cosig() { grep -q "^— $1 " "$S/ledger/checkpoint"; }
wait_for() { for _ in $(seq 400); do "$@" && return 0; sleep 0.05; done; return 1; }

# The restart's checkpoint (a clean stop signs one) is the newest periodic one: it is sent.
check "witness 1 cosigns the newest periodic checkpoint" wait_for has_cosig w1.example/witness
N1=$(sed -n 2p "$S/ledger/checkpoint")
check "  ... and the log says so" \
	grep -q "witness w1.example/witness cosigned checkpoint $N1" "$T/d.log"
check "witness 2, down, is retried with backoff" wait_for grep -q "witness w2.example/witness: checkpoint $N1: .*again in" "$T/d.log"
check "  ... and nothing of it is stored yet" sh -c "! grep -q 'w2.example' '$S/ledger/checkpoint'"
start_witness 2 "$P2" w2.example/witness
check "witness 2, up later, cosigns the checkpoint that waited" wait_for has_cosig w2.example/witness
check "  ... the same checkpoint ($N1)" test "$(sed -n 2p "$S/ledger/checkpoint")" = "$N1"
cp "$S/ledger/checkpoint" "$T/c1"
expect_exit 0 "both cosignatures verify in Python (threshold 2)" $PY "$WIT" check "$T/c1" "$V1" "$V2" --threshold 2
: >"$T/empty.proof"
expect_exit 0 "  ... and the log's own signature still does (assent-verify consistency, c1 to itself)" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c1" --proof "$T/empty.proof" --key "$S/keys/checkpoint.pub"
expect_exit 0 "assent-verify checkpoint --check with both witnesses, threshold 2" \
	"$VERIFY" checkpoint --check "$T/c1" --key "$S/keys/checkpoint.pub" --witness "$V1" --witness "$V2" --witness-threshold 2
grep -v '^— w2\.' "$T/c1" >"$T/c1.one"
expect_exit 1 "  ... one of them removed: the threshold of 2 is not met" $PY "$WIT" check "$T/c1.one" "$V1" "$V2" --threshold 2
expect_exit 1 "  ... and assent-verify refuses it too" \
	"$VERIFY" checkpoint --check "$T/c1.one" --key "$S/keys/checkpoint.pub" --witness "$V1" --witness "$V2" --witness-threshold 2
# the ledger's own copy (LMDB "checkpoints" at N1), read with python3-lmdb
$PY - "$S/ledger" "$N1" "$T/c1.lmdb" <<'PY'
import lmdb, struct, sys
env = lmdb.open(sys.argv[1], readonly=True, max_dbs=4, lock=False)
with env.begin() as txn:
    v = txn.get(struct.pack('>Q', int(sys.argv[2])), db=env.open_db(b'checkpoints', txn=txn, create=False))
open(sys.argv[3], 'wb').write(v or b'')
PY
expect_exit 0 "the checkpoint stored in the ledger at $N1 carries both cosignatures too" \
	$PY "$WIT" check "$T/c1.lmdb" "$V1" "$V2" --threshold 2
check "each witness's line appears once" test "$(grep -c '^— w[12]\.' "$T/c1")" = 2

# ---- on demand: a checkpoint made beside the daemon is sent with a consistency proof ----
for i in 1 2 3 4 5; do ask "more $i"; done
expect_exit 0 "assent ledger checkpoint beside the running daemon" "$ASSENT" --state "$S" ledger checkpoint
N2=$(sed -n 2p "$S/ledger/checkpoint")
check "the tree grew ($N1 < $N2)" test "$N1" -lt "$N2"
new_cosigned() { grep -q "witness $1 cosigned checkpoint $N2" "$T/d.log"; }
check "witness 1 cosigns it (its consistency proof from $N1 checked by witness.py)" wait_for new_cosigned w1.example/witness
check "witness 2 too" wait_for new_cosigned w2.example/witness
cp "$S/ledger/checkpoint" "$T/c2"
expect_exit 0 "both verify in Python" $PY "$WIT" check "$T/c2" "$V1" "$V2" --threshold 2
expect_exit 0 "assent-verify ledger --witness (both, threshold 2) finds a witnessed checkpoint" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub" --witness "$V1" --witness "$V2" --witness-threshold 2
check "  ... and says which size the witnesses cosigned" grep -q 'witnessed: size [0-9]* cosigned by 2 of 2' "$T/.out"
check "the sizes sent are kept (STATE/witnesses.state)" grep -q "^w2.example/witness [0-9a-f]* $N2$" "$S/witnesses.state"
curl -s "$R/metrics" >"$T/m1"
check "/metrics counts the cosignatures stored (4 or more)" \
	grep -Eq '^assent_witness_cosignatures_total\{result="stored"\} ([4-9]|[1-9][0-9]+)$' "$T/m1"
check "/metrics: no conflict" grep -q '^assent_witness_conflicts_total 0$' "$T/m1"

# ---- a witness whose cosignatures are forged, after a restart ----
for i in 1 2; do ask "before the stop $i"; done # the stop signs a periodic checkpoint of them
kill "$DPID"
for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json"
start_witness 3 "$P3" w3.example/forger --forge
printf '%s http://127.0.0.1:%s/w3/\n' "$V3" "$P3" >>"$T/witnesses"
ASSENT_WITNESSES=$T/witnesses ASSENT_NOTIFY_BACKOFF_MS=100 ASSENT_SINGLE_USER=$(agent_single_user) \
	daemon_start --policy "$T/p.policy"
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
R=http://$(listener "$S" review)
N3=$(sed -n 2p "$S/ledger/checkpoint")
cosigned3() { grep -q "witness $1 cosigned checkpoint $N3" "$T/d.log"; }
check "after a restart witness 1 cosigns the stop's checkpoint ($N3)" wait_for cosigned3 w1.example/witness
check "  ... asked from the size kept, no 409 first" sh -c "! grep -q 'witness w1.example/witness has size' '$T/d.log'"
check "the forged cosignature is refused" \
	wait_for grep -q "witness w3.example/forger: checkpoint $N3: its cosignature does not verify" "$T/d.log"
check "  ... and not stored" sh -c "! grep -q 'w3.example' '$S/ledger/checkpoint'"
curl -s "$R/metrics" >"$T/m2"
check "/metrics counts it refused" grep -Eq '^assent_witness_cosignatures_total\{result="refused"\} [1-9]' "$T/m2"

# ---- the sizes kept are lost: each witness is asked with old 0 and its 409 says its size ----
open_agent_sock "$S"
for i in 1 2; do ask "before the second stop $i"; done
kill "$DPID"
for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json" "$S/witnesses.state"
printf '%s http://127.0.0.1:%s/w1/\n' "$V1" "$P1" >"$T/w1only"
ASSENT_WITNESSES=$T/w1only ASSENT_NOTIFY_BACKOFF_MS=100 ASSENT_SINGLE_USER=$(agent_single_user) \
	daemon_start --policy "$T/p.policy"
daemon_listens "a restart without STATE/witnesses.state"
N4=$(sed -n 2p "$S/ledger/checkpoint")
check "witness 1 answers old 0 with its size ($N3), and is asked again from there" \
	wait_for grep -q "witness w1.example/witness has size $N3 (not 0): asking again from there" "$T/d.log"
cosigned4() { grep -q "witness w1.example/witness cosigned checkpoint $N4" "$T/d.log"; }
check "  ... then cosigns checkpoint $N4 over the proof from $N3" wait_for cosigned4
check "  ... and its size is kept again" grep -q "^w1.example/witness [0-9a-f]* $N4$" "$S/witnesses.state"
N3=$N4

# ---- a forked ledger under the same key: the witnesses saw another tree ----
kill "$DPID"
for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
S1=$S
S=$T/fork
mkdir -p "$S/keys"
cp "$S1/keys/checkpoint.key" "$S1/keys/checkpoint.pub" "$S/keys/"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" >/dev/null
printf '%s http://127.0.0.1:%s/w1/\n' "$V1" "$P1" >"$T/fork.witnesses"
ASSENT_WITNESSES=$T/fork.witnesses ASSENT_NOTIFY_BACKOFF_MS=100 ASSENT_SINGLE_USER=$(agent_single_user) \
	daemon_start --policy "$T/p.policy"
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
daemon_listens "a second ledger under the same key (a fork) starts"
open_agent_sock "$S"
for i in 1 2; do ask "forked $i"; done # its first commit's checkpoint is a periodic one
check "  ... under the same origin" test "$(sed -n 1p "$S/ledger/checkpoint")" = "$ORIGIN"
R=http://$(listener "$S" review)
check "witness 1 saw another tree: an error line" wait_for grep -q 'error.*witness w1.example/witness saw another tree at size' "$T/d.log"
check "  ... no cosignature stored" sh -c "! grep -q 'w1.example' '$S/ledger/checkpoint'"
curl -s "$R/metrics" >"$T/m3"
check "/metrics: assent_witness_conflicts_total 1" grep -q '^assent_witness_conflicts_total 1$' "$T/m3"
wait_for sh -c "curl -s '$R/health' | grep -q witness_alarm"
curl -s "$R/health" >"$T/h3"
check "/health shows the alarm" grep -q '"witness_alarm":"w1.example/witness at [0-9]*"' "$T/h3"
check "  ... as JSON" $PY -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/h3"
check "witness 1 still holds the first ledger's tree ($N3)" grep -q "\"size\": $N3" "$T/w1.json"
expect_exit 1 "the forked ledger gathered no cosignature: assent-verify ledger --witness refuses it" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub" --witness "$V1" --witness-threshold 1

done_testing
