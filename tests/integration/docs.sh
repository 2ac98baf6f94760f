#!/usr/bin/env bash
# The documentation holds together (issue 30): the README stays a front door; every link of the
# README and docs/ resolves inside the repository (file and heading); every man page in the tree
# renders without a groff warning and without words joined by a font macro, is installed by
# `make install` and is linked from the README; every variable the daemon reads is in assentd(8).
. "$(dirname "$0")/../lib.sh"
cd "$ROOT" || exit 2

n=$(wc -l <README.md)
check "the README is a front door: $n lines (at most 300)" test "$n" -le 300

# Links: [text](target) outside code blocks; a target leaving the repository, a missing file or a
# missing heading anchor (GitHub's rule: lower case, punctuation dropped, blanks to dashes).
out=$($PY - README.md docs/*.md <<'PY'
import os, re, sys
root = os.path.realpath(".")
def anchors(path):
    a, code = set(), False
    for line in open(path):
        if line.startswith("```"):
            code = not code
        m = not code and re.match(r"^#+ (.*)", line)
        if m:
            a.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return a
n = 0
for f in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        n += 1
        u = m.group(1)
        path, _, frag = u.partition("#")
        if re.match(r"^[a-z]+:", u):
            print(f"{f}: {u}: a link out of the repository")
            continue
        tgt = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else os.path.realpath(f)
        if not tgt.startswith(root + os.sep):
            print(f"{f}: {u}: points outside the repository")
        elif not os.path.exists(tgt):
            print(f"{f}: {u}: no such file")
        elif frag and tgt.endswith(".md") and frag not in anchors(tgt):
            print(f"{f}: {u}: no such heading")
print(f"# {n} links")
PY
)
check "every link of README.md and docs/*.md resolves inside the repository ($(tail -1 <<<"$out"))" \
	test -z "$(grep -v '^#' <<<"$out")"
grep -v '^#' <<<"$out" | sed 's/^/# /'
check "no page names ../shared/ (outside the repository)" sh -c '! grep -n "\.\./shared" README.md docs/*.md'

for m in $(git ls-files '*.[1-8]'); do
	w=$(groff -man -ww -z "$m" 2>&1)
	check "$m: groff -man -ww gives no warning${w:+ ($w)}" test -z "$w"
	check "$m: make install installs it" grep -q "$m" Makefile
	check "$m: the README links it" grep -q "($m)" README.md
	if command -v man >/dev/null; then
		# A word the page does not hold in its source, made of two words glued by a font
		# change (".B DIR" then "That is"), shows as lower.Upper or word,word with no blank.
		j=$(MANWIDTH=80 man -l "$m" 2>/dev/null | col -b | grep -oE '[A-Za-z]{2,}[.,;:][A-Z][a-z]{2,}' |
			while read -r t; do grep -qF -- "$t" "$m" || echo "$t"; done | sort -u | tr '\n' ' ')
		check "$m: MANWIDTH=80 man -l shows no joined words${j:+ ($j)}" test -z "$j"
	fi
done

# Every variable the daemon's code reads by name is in assentd(8) (the CLI's own are in assent(1)).
miss=""
for v in $(grep -rhoE '"(ASSENT|FEEDBACK)_[A-Z0-9_]+"' gateway/signer gateway/worker gateway/recorder gateway/proto \
	gateway/cli/assentd.c gateway/cli/bridge.c common ledger policy --include='*.c' --include='*.h' | tr -d '"' | sort -u); do
	grep -q "$v" gateway/cli/assentd.8 || miss="$miss $v"
done
check "assentd(8) names every variable the daemon reads${miss:+ (missing:$miss)}" test -z "$miss"
done_testing
