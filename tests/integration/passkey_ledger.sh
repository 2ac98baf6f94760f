#!/usr/bin/env bash
# Passkey decisions checked offline by assent-verify ledger, on demo ledgers whose
# assertions are made by an independent Python authenticator: passkey_ledger.py.
. "$(dirname "$0")/../lib.sh"
py_tap "$ROOT/tests/integration/passkey_ledger.py" "$ROOT/build" "$T"
done_testing
