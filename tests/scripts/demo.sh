#!/usr/bin/env bash
# `make demo`: append a few realistic entries to the demo ledger in STATE (`assent ledger
# append` writes demo ledgers only: origin assent-demo/KEYID, which the verifier names)
# (default ./var), sign a checkpoint, and verify the ledger as an auditor would,
# against the checkpoint saved by the previous run when there is one.
set -euo pipefail
STATE=${1:-./var}
B=$(cd "$(dirname "$0")/../.." && pwd)/build
mkdir -p "$STATE"
now=$(date +%s)
sid="demo-$now-$$"
echo "== appending a request and its decision to $STATE/ledger"
"$B/assent" --state "$STATE" ledger append <<JSON
{"kind":"request","session_id":"$sid","type":"approval","message":"Apply plan.tfplan to prod-eu-west-1?","context":{"workspace":"prod-eu-west-1","changes":{"add":3,"change":1,"destroy":0}},"audience":"tf-prod","requester":{"uid":$(id -u),"client":"demo"}}
{"kind":"decision","session_id":"$sid","outcome":"approved","response":"looks right","reviewer":{"name":"$(id -un)","channel":"demo"},"assurance":"self-attested"}
JSON
echo "== signing a checkpoint"
"$B/assent" --state "$STATE" ledger checkpoint
saved="$STATE/auditor-saved.checkpoint"
echo "== verifying with the checkpoint key and the checkpoint the last run saved"
args=(--key "$STATE/keys/checkpoint.pub")
[ -f "$saved" ] && args+=(--trusted "$saved")
"$B/assent-verify" ledger "$STATE/ledger" "${args[@]}"
"$B/assent-verify" checkpoint "$STATE/ledger" --key "$STATE/keys/checkpoint.pub" >"$saved"
echo "== inclusion proof of the decision, checked as a third party would"
size=$(sed -n 2p "$saved")
"$B/assent-verify" proof "$STATE/ledger" $((size - 1)) --key "$STATE/keys/checkpoint.pub" >"$STATE/last.proof"
"$B/assent-verify" proof --check "$STATE/last.proof" --key "$STATE/keys/checkpoint.pub"
echo "== the last two entries, as an auditor exports them"
"$B/assent-verify" export "$STATE/ledger" --from $((size - 2))
echo
echo "Saved checkpoint: $saved (the next 'make run' verifies against it)."
