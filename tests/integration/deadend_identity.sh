#!/usr/bin/env bash
# `assent reviewer add` either succeeds whole or says it failed (issue 29, 3): when its
# ledger entry cannot be written (here: the checkpoint key was swapped, so the command
# refuses to sign), the reviewer is not left registered, and the command says it was
# not added. (The race that led there, a daemon and a command both making a checkpoint
# key, is tests/unit/eckey_test.c's.)
. "$(dirname "$0")/../lib.sh"
S=$T/state
expect_exit 0 "a first reviewer is added (the ledger and its key are made)" "$ASSENT" --state "$S" reviewer add alice
openssl ecparam -name prime256v1 -genkey -noout -out "$T/other.key" 2>/dev/null
cp "$T/other.key" "$S/keys/checkpoint.key"
expect_exit 1 "adding bob with a ledger the command cannot sign fails" "$ASSENT" --state "$S" reviewer add bob
check "... saying that bob was not added ($ERR)" sh -c "printf '%s' \"\$1\" | grep -q 'reviewer bob was not added'" _ "$ERR"
"$ASSENT" --state "$S" reviewer list >"$T/list.out" 2>&1
check "... and bob is not registered" sh -c "! grep -q bob '$T/list.out'"
check "... alice still is" grep -q alice "$T/list.out"
done_testing
