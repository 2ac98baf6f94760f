#!/usr/bin/env python3
"""Read the MCP conformance suite's results (one `-o DIR` per spec version, one
SCENARIO-TIMESTAMP/checks.json per scenario) and print, for tests/integration/conformance.sh:
  - one line `PASS desc` or `FAIL desc` per scenario and version that applies to assentd,
  - one line per version saying whether at least MIN scenarios ran at all,
  - the table of scenario x version (pass / fail / n/a and why) as `# ...` lines.

A scenario is n/a for a server of its own tools when it needs what such a server cannot
have: the suite's fixture tools (test_simple_text, slow_compute, ...), resources, prompts,
completions. Those are named below, each with its reason (whole scenarios in NA_SCENARIO,
single checks of an otherwise applicable scenario in NA_CHECK). The suite itself marks some
checks `details.untestable` ("Not testable: ..."): a FAILURE so marked is n/a with the
suite's own message. Every other FAILURE fails its scenario; SUCCESS, WARNING, INFO and
SKIPPED do not (a scenario with nothing but skips is reported n/a, never as a pass).
The fixture-tool scenarios are for later, through assent in front of a fixture server."""
import json
import os
import re
import sys

FIXTURE = "fixture tool %s (only the suite's test server has it)"
RESOURCES = "resources (assentd serves tools only)"
PROMPTS = "prompts (assentd serves tools only)"

NA_SCENARIO = {
    "completion-complete": "completions (assentd offers no completion/complete: it has no prompts or resource templates)",
    "tools-call-simple-text": FIXTURE % "test_simple_text",
    "tools-call-image": FIXTURE % "test_image_content",
    "tools-call-audio": FIXTURE % "test_audio_content",
    "tools-call-embedded-resource": FIXTURE % "test_embedded_resource",
    "tools-call-mixed-content": FIXTURE % "test_multiple_content_types",
    "tools-call-with-logging": FIXTURE % "test_tool_with_logging",
    "tools-call-error": FIXTURE % "test_error_handling",
    "tools-call-with-progress": FIXTURE % "test_tool_with_progress",
    "tools-call-sampling": FIXTURE % "test_sampling",
    "tools-call-elicitation": FIXTURE % "test_elicitation",
    "elicitation-sep1034-defaults": FIXTURE % "test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": FIXTURE % "test_elicitation_sep1330_enums",
    "json-schema-2020-12": FIXTURE % "json_schema_2020_12_tool",
    "server-sse-polling": FIXTURE % "test_reconnection",
    "resources-list": RESOURCES,
    "resources-read-text": RESOURCES,
    "resources-read-binary": RESOURCES,
    "resources-templates-read": RESOURCES,
    "resources-subscribe": "resource subscriptions (assentd serves no resources)",
    "resources-unsubscribe": "resource subscriptions (assentd serves no resources)",
    "sep-2164-resource-not-found": RESOURCES,
    "prompts-list": PROMPTS,
    "prompts-get-simple": PROMPTS,
    "prompts-get-with-args": PROMPTS,
    "prompts-get-embedded-resource": PROMPTS,
    "prompts-get-with-image": PROMPTS,
    "input-required-result-basic-elicitation": FIXTURE % "test_input_required_result_elicitation",
    "input-required-result-basic-sampling": FIXTURE % "test_input_required_result_sampling",
    "input-required-result-basic-list-roots": FIXTURE % "test_input_required_result_list_roots",
    "input-required-result-request-state": FIXTURE % "test_input_required_result_request_state",
    "input-required-result-multiple-input-requests": FIXTURE % "test_input_required_result_multiple_inputs",
    "input-required-result-multi-round": FIXTURE % "test_input_required_result_multi_round",
    "input-required-result-missing-input-response": FIXTURE % "test_input_required_result_elicitation",
    "input-required-result-non-tool-request": "prompts (fixture prompt test_input_required_result_prompt)",
    "input-required-result-result-type": FIXTURE % "test_input_required_result_elicitation",
    "input-required-result-tampered-state": FIXTURE % "test_input_required_result_tampered_state",
    "input-required-result-capability-check": FIXTURE % "test_input_required_result_capabilities",
    "input-required-result-ignore-extra-params": FIXTURE % "test_input_required_result_elicitation",
    # It sends malformed inputResponses to the fixture tool: an unknown-tool error passes it vacuously.
    "input-required-result-validate-input": FIXTURE % "test_input_required_result_elicitation",
    "tasks-lifecycle": FIXTURE % "greet, slow_compute, failing_job, protocol_error_job",
    "tasks-wire-fields": FIXTURE % "slow_compute",
    "tasks-request-state-removal": FIXTURE % "slow_compute",
    "tasks-mrtr-input": FIXTURE % "confirm_delete, multi_input",
    "tasks-mrtr-composition": FIXTURE % "test_tool_with_task",
    "tasks-required-task-error": FIXTURE % "failing_job (registered with taskSupport required)",
    "tasks-status-notifications": FIXTURE % "failing_job",
    "sep-2640-skills-directory": "skills extension (assentd serves no skill resources)",
    "sep-2640-skills-enumeration": "skills extension (assentd serves no skill resources)",
    "sep-2640-skills-manifest": "skills extension (assentd serves no skill resources)",
}


def method_not_found(check):
    """The server answered -32601: right for a method of a capability it does not have."""
    err = (check.get("details") or {}).get("error") or {}
    return err.get("code") == -32601


# (scenario, check id) -> (reason, condition or None). With a condition, the check is n/a
# only when it holds; otherwise its FAILURE counts.
NA_CHECK = {
    ("caching", "sep-2549-prompts-list-caching-hints"): (PROMPTS + "; it answered -32601", method_not_found),
    ("caching", "sep-2549-resources-list-caching-hints"): (RESOURCES + "; it answered -32601", method_not_found),
    ("caching", "sep-2549-resources-templates-list-caching-hints"): (RESOURCES + "; it answered -32601", method_not_found),
    ("tasks-capability-negotiation", "sep-2663-server-rejects-undeclared-client"): (FIXTURE % "slow_compute", None),
    ("tasks-capability-negotiation", "tasks-per-request-meta-opt-in"): (FIXTURE % "slow_compute", None),
    ("tasks-request-headers", "tasks-headers-tolerate-mcp-method-on-tools-call"): (FIXTURE % "greet", None),
    ("tasks-request-headers", "sep-2663-routing-headers-accepted-on-tasks-get"): (FIXTURE % "slow_compute", None),
    ("tasks-request-headers", "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get"): (
        "needs a task of fixture tool slow_compute", None),
    ("tasks-dispatch-and-envelope", "tasks-server-directed-creation-no-hint"): (FIXTURE % "failing_job", None),
    ("tasks-dispatch-and-envelope", "sep-2663-legacy-task-param-ignored"): (FIXTURE % "greet", None),
    ("tasks-dispatch-and-envelope", "tasks-immediate-result-shortcut"): (FIXTURE % "slow_compute", None),
    ("tasks-dispatch-and-envelope", "tasks-result-type-complete-on-non-task-responses"): (
        FIXTURE % "greet, slow_compute, confirm_delete", None),
    ("tasks-dispatch-and-envelope", "sep-2663-durable-create-strong-consistency"): (FIXTURE % "slow_compute", None),
}

STAMP = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
OK_STATUSES = {"SUCCESS", "WARNING", "INFO", "SKIPPED"}


def clip(text, n=160):
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."


def judge(scenario, checks):
    """-> (verdict 'pass' | 'fail' | 'n/a', detail)"""
    if scenario in NA_SCENARIO:
        return "n/a", NA_SCENARIO[scenario]
    if not isinstance(checks, list) or not checks:
        return "fail", "the suite recorded no checks"
    passed, na, fails = 0, [], []
    for c in checks:
        status = c.get("status")
        cid = c.get("id", "?")
        if status == "SUCCESS":
            passed += 1
            continue
        if status in OK_STATUSES:
            continue
        rule = NA_CHECK.get((scenario, cid))
        if (c.get("details") or {}).get("untestable"):
            na.append("%s: %s" % (cid, clip(c.get("errorMessage"), 120)))
        elif rule and (rule[1] is None or rule[1](c)):
            na.append("%s: %s" % (cid, rule[0]))
        else:
            fails.append("%s: %s" % (cid, clip(c.get("errorMessage") or status)))
    if fails:
        more = " (+%d more failing)" % (len(fails) - 1) if len(fails) > 1 else ""
        return "fail", fails[0] + more
    if passed == 0:
        why = na[0] if na else "the suite skipped every check: " + clip(checks[0].get("errorMessage"), 120)
        return "n/a", why
    return "pass", ("%d checks passed" % passed) + ("; n/a: " + "; ".join(na) if na else "")


def crashes(log):
    """Scenarios the suite could not run to the end (no checks.json): its log names them."""
    found = {}
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"Failed to run scenario ([a-z0-9-]+): (.*)", line)
                if m:
                    found[m.group(1)] = m.group(2)
    except OSError:
        pass
    return found


def not_scored(log):
    """What the suite's summary lists under "Not scored for REVISION" (extension, pending, ...)."""
    names, on = [], False
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Not scored for"):
                    on = True
                elif on:
                    m = re.match(r"\s+\S+\s+([a-z0-9-]+) \(([^)]*)\)", line)
                    if not m:
                        break
                    names.append("%s (%s)" % (m.group(1), m.group(2)))
    except OSError:
        pass
    return names


def read_run(outdir):
    crashed = crashes(outdir + ".log")
    runs = {}
    for entry in sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []:
        m = STAMP.match(entry)
        if not m:
            continue
        path = os.path.join(outdir, entry, "checks.json")
        try:
            with open(path, encoding="utf-8") as f:
                runs[m.group(1)] = json.load(f)
        except (OSError, ValueError) as e:
            why = crashed.get(m.group(1))
            runs[m.group(1)] = ("the scenario stopped with: " + clip(why, 250)) if why else (
                "unreadable %s: %s" % (path, e))
    for name, why in crashed.items():
        runs.setdefault(name, "the scenario stopped with: " + clip(why, 250))
    return runs


def main(argv):
    versions, dirs, mins = [], {}, {}
    for arg in argv:
        ver, rest = arg.split("=", 1)
        d, n = rest.rsplit(":", 1)
        versions.append(ver)
        dirs[ver], mins[ver] = d, int(n)
    results = {v: read_run(dirs[v]) for v in versions}
    table = {}
    for ver in versions:
        ran = results[ver]
        if len(ran) >= mins[ver]:
            print("PASS %s: the suite ran %d scenarios (at least %d)" % (ver, len(ran), mins[ver]))
        else:
            print("FAIL %s: the suite ran only %d scenarios, wanted at least %d (a broken run?)" % (
                ver, len(ran), mins[ver]))
        for sc in sorted(ran):
            verdict, detail = judge(sc, ran[sc] if isinstance(ran[sc], list) else None)
            if isinstance(ran[sc], str):
                verdict, detail = "fail", ran[sc]
            table.setdefault(sc, {})[ver] = (verdict, detail)
            if verdict == "pass":
                print("PASS conformance %s %s: %s" % (ver, sc, clip(detail, 200)))
            elif verdict == "fail":
                print("FAIL conformance %s %s: %s" % (ver, sc, clip(detail, 300)))
    width = max([len(s) for s in table] + [8])
    print("# %-*s  %s" % (width, "scenario", "  ".join("%-10s" % v for v in versions)))
    reasons = []
    for sc in sorted(table):
        cells = []
        for v in versions:
            verdict, detail = table[sc].get(v, ("-", ""))
            cells.append("%-10s" % verdict)
            if verdict == "n/a":
                reasons.append("%s (%s): %s" % (sc, v, detail))
        print("# %-*s  %s" % (width, sc, "  ".join(cells)))
    for v in versions:
        ns = not_scored(dirs[v] + ".log")
        if ns:
            print("# %s: run but not scored by the suite's requirements (each still a check here if it applies): %s" % (
                v, ", ".join(ns)))
    print("# - : not run at that version. n/a reasons:")
    for r in reasons:
        print("#   " + r)
    for sc in sorted(table):
        for v in versions:
            verdict, detail = table[sc].get(v, ("-", ""))
            if verdict == "fail":
                print("# failing %s %s: %s" % (v, sc, detail))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
