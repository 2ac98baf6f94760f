#!/usr/bin/env python3
"""Read the conformance suite's results against the fixture upstream (tests/mcp/upstream_fixture.mjs)
called directly and through assentd (the fixture as a stdio upstream and as a url upstream, each
with "prefix": ""), one `-o DIR` per spec version and column, and print, for tests/integration/conformance_fixture.sh:
  - `PASS desc` / `FAIL desc` per version: the direct run ran at least MIN scenarios;
  - per scenario the fixture is built to pass directly (DIRECT_EXPECTED): it did;
  - per scenario that passed directly: it passes through assent too, over each kind of upstream
    (or `SKIP desc` per version and kind when that column was not run, with the reason);
  - the table scenario x (version, direct | stdio | url), the pass counts, and what failed, as
    `# ...` lines.
Arguments: VERSION:MIN:DIRECT_DIR:STDIO_DIR:URL_DIR  (a gate DIR is `-REASON` when not run).

Judging is conformance_table.py's without its n/a list (that list is for a server of its own
tools; the fixture has the fixture tools): a FAILURE fails the scenario unless the suite marks
it untestable; a scenario of nothing but skips is n/a; one the suite could not finish fails."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance_table import OK_STATUSES, clip, read_run  # noqa: E402

# What the fixture (SDK 1.32.2 sessions for 2025, SDK 2.4 for 2026-07-28) is built to pass when called directly.
DIRECT_EXPECTED = {
    "2025-11-25": {
        "server-initialize", "server-session-lifecycle", "logging-set-level", "ping", "completion-complete",
        "tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
        "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error",
        "tools-call-with-progress", "tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12",
        "elicitation-sep1034-defaults", "server-sse-polling", "server-sse-multiple-streams",
        "elicitation-sep1330-enums", "resources-list", "resources-read-text", "resources-read-binary",
        "resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list",
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection",
    },
    # --requirements 2026-07-28: all but the tasks extension (not scored by the suite; its fixture
    # tools slow_compute, greet, failing_job... are not served).
    "2026-07-28": {
        "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
        "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
        "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
        "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection", "caching", "json-schema-2020-12", "http-header-validation",
        "http-custom-header-server-validation",
        "input-required-result-basic-elicitation", "input-required-result-basic-sampling",
        "input-required-result-basic-list-roots", "input-required-result-request-state",
        "input-required-result-multiple-input-requests", "input-required-result-multi-round",
        "input-required-result-missing-input-response", "input-required-result-non-tool-request",
        "input-required-result-result-type", "input-required-result-unsupported-methods",
        "input-required-result-tampered-state", "input-required-result-capability-check",
        "input-required-result-ignore-extra-params", "input-required-result-validate-input",
    },
}


COLUMNS = ("stdio", "url")  # the upstream kinds of the through-assent columns

# Scenarios that pass directly and not through assent, each with why: what the gate does not do
# yet (docs/gate.md, "Not yet"), per (upstream kind, version,
# scenario). Reported as SKIP with the reason
# (never as a pass), and listed under the table; when one starts to pass through assent its
# entry must go (a PASS of a listed gap is reported as a failure, so that the list stays true).
GATE_GAPS = {}  # none now: every scenario that passes directly passes through assent over both kinds


def judge(checks):
    """-> (verdict 'pass' | 'fail' | 'n/a', detail)"""
    if isinstance(checks, str):
        return "fail", checks
    if not isinstance(checks, list) or not checks:
        return "fail", "the suite recorded no checks"
    passed, na, fails = 0, [], []
    for c in checks:
        status = c.get("status")
        if status == "SUCCESS":
            passed += 1
        elif status in OK_STATUSES:
            continue
        elif (c.get("details") or {}).get("untestable"):
            na.append("%s: %s" % (c.get("id", "?"), clip(c.get("errorMessage"), 120)))
        else:
            fails.append("%s: %s" % (c.get("id", "?"), clip(c.get("errorMessage") or status)))
    if fails:
        more = " (+%d more failing)" % (len(fails) - 1) if len(fails) > 1 else ""
        return "fail", fails[0] + more
    if passed == 0:
        return "n/a", na[0] if na else "the suite skipped every check"
    return "pass", "%d checks passed" % passed


def gate_line(ver, col, sc, dv, gv, gd):
    """The TAP line for one scenario through assent over one kind of upstream, and its table cell."""
    gap = GATE_GAPS.get((col, ver, sc))
    if dv != "pass" or gv == "skip":
        return None, gv
    if gap and gv != "pass":
        return "SKIP conformance %s %s through assent (%s upstream): not yet: %s" % (ver, sc, col, gap), "gap"
    if gap:
        return "FAIL conformance %s %s through assent (%s upstream) passes now: take it out of GATE_GAPS" % (
            ver, sc, col), gv
    return "%s conformance %s %s through assent (%s upstream): %s" % ("PASS" if gv == "pass" else "FAIL", ver, sc,
                                                                     col, clip(gd, 200)), gv


def main(argv):
    runs = []
    for arg in argv:
        ver, n, direct, stdio, url = arg.split(":", 4)
        runs.append((ver, int(n), direct, {"stdio": stdio, "url": url}))
    table, failing = {}, []
    for ver, n, direct, gates in runs:
        d = read_run(direct)
        g = {c: read_run(gates[c]) if not gates[c].startswith("-") else None for c in COLUMNS}
        if len(d) >= n:
            print("PASS %s: the suite ran %d scenarios against the fixture directly (at least %d)" % (ver, len(d), n))
        else:
            print("FAIL %s: the suite ran only %d scenarios against the fixture directly, wanted %d" % (ver, len(d), n))
        names = set(d)
        for c in COLUMNS:
            names |= set(g[c] or {})
        for sc in sorted(names):
            dv, dd = judge(d[sc]) if sc in d else ("-", "not run")
            if sc in DIRECT_EXPECTED.get(ver, ()):
                print("%s conformance %s %s directly: %s" % ("PASS" if dv == "pass" else "FAIL", ver, sc, clip(dd, 200)))
            if dv == "fail":
                failing.append("direct %s %s: %s" % (ver, sc, dd))
            cells = [dv]
            for c in COLUMNS:
                if g[c] is None:
                    gv, gd = "skip", gates[c][1:]
                else:
                    gv, gd = judge(g[c][sc]) if sc in g[c] else ("-", "not run")
                line, cell = gate_line(ver, c, sc, dv, gv, gd)
                if line:
                    print(line)
                cells.append(cell)
                if gv == "fail":
                    failing.append("through assent (%s) %s %s: %s" % (c, ver, sc, gd))
            table.setdefault(sc, {})[ver] = cells
        for c in COLUMNS:
            if g[c] is None:
                print("SKIP %s through assent (%s upstream): %s" % (ver, c, gates[c][1:]))
    width = max([len(s) for s in table] + [8])
    print("# %-*s  %s" % (width, "scenario", "  ".join("%-26s" % v for v, *_ in runs)))
    print("# %-*s  %s" % (width, "", "  ".join("%-8s %-8s %-8s" % ("direct", "stdio", "url") for _ in runs)))
    for sc in sorted(table):
        cells = ["%-8s %-8s %-8s" % tuple(table[sc].get(v, ("-", "-", "-"))) for v, *_ in runs]
        print("# %-*s  %s" % (width, sc, "  ".join(cells)))
    for ver, *_ in runs:
        counts = {"direct": 0, "stdio": 0, "url": 0}
        for sc in table:
            for k, v in zip(("direct", "stdio", "url"), table[sc].get(ver, ("-", "-", "-"))):
                counts[k] += v == "pass"
        print("# %s passes: direct %d, through stdio %d, through url %d" % (ver, counts["direct"], counts["stdio"],
                                                                         counts["url"]))
    print("# -: not run at that version; skip: the gate column was not run; gap: what the gate does not do yet:")
    for (c, v, sc), why in sorted(GATE_GAPS.items()):
        print("#   %s %s (%s upstream): %s" % (v, sc, c, why))
    for f in failing:
        print("# failing " + clip(f, 300))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
