#!/usr/bin/env bash
# Bad input on stdio through the bridge and the daemon (see gateway_badinput.py).
. "$(dirname "$0")/../lib.sh"
S=$T/state
trap 'p=$($PY -c "import json;print(json.load(open(\"$S/assentd.json\"))[\"pid\"])" 2>/dev/null); [ -n "$p" ] && kill "$p"; sleep 0.2; rm -rf "$T"' EXIT
$PY "$ROOT/tests/integration/gateway_badinput.py" "$S" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python client exited $rc: $(tail -3 "$T/py.err")"
check "the daemon logged no worker death while handling bad input" sh -c "! grep -q 'worker down' '$S/assentd.log'"
done_testing
