#!/usr/bin/env python3
"""The size bounds of the product's code (issue 30): no C file over FILE_MAX lines in the
folders FILE_SCOPE names (the signer and the workers), and no function over FUNC_MAX lines
anywhere in the product (not tests/ or fuzz/). Functions are measured by universal-ctags
(start and end lines, both counted).

What is over a bound today is named in KNOWN below, so the check passes while the work is
under way; a new offender fails, and so does a listed one that has come back under its
bound (take it off the list: the list stays true and can only shrink). Prints the figures
as '# ' lines, then one line per problem; exits 1 if any."""
import json, os, subprocess, sys

FILE_MAX = 800
FUNC_MAX = 100
PRODUCT = ('common/', 'gateway/', 'include/', 'ledger/', 'policy/', 'verify/')
FILE_SCOPE = ('gateway/signer/', 'gateway/worker/')
SHOW = 10  # how many of the largest files and functions to print

# Known offenders: 'path' for a file over FILE_MAX, 'path:function' for a function over
# FUNC_MAX. Only ever remove lines from this list.
KNOWN = set()  # none left (issue 30); a new offender fails the check


def product_files():
    out = subprocess.check_output(['git', 'ls-files', '*.c', '*.h'], text=True)
    return [f for f in out.split() if f.startswith(PRODUCT)]


def file_lines(files):
    sizes = {}
    for f in files:
        with open(f, 'rb') as fh:
            sizes[f] = sum(1 for _ in fh)
    return sizes


def function_lines(files):
    """[(lines, 'path:function')] for every function definition ctags finds."""
    out = subprocess.check_output(['ctags', '--output-format=json', '--fields=+ne', '--kinds-C=f',
                                   '--language-force=C', '-o', '-'] + files, text=True)
    funcs, problems = [], []
    for line in out.splitlines():
        t = json.loads(line)
        if t.get('_type') != 'tag':
            continue
        key = '%s:%s' % (t['path'], t['name'])
        if 'end' not in t:
            problems.append('%s:%d: ctags found no end for %s' % (t['path'], t['line'], t['name']))
            continue
        funcs.append((t['end'] - t['line'] + 1, key))
    return funcs, problems


def main():
    root = subprocess.check_output(['git', 'rev-parse', '--show-toplevel'], text=True).strip()
    os.chdir(root)
    files = product_files()
    sizes = file_lines(files)
    funcs, problems = function_lines(files)

    scoped = sorted(((n, f) for f, n in sizes.items() if f.startswith(FILE_SCOPE)), reverse=True)
    funcs.sort(reverse=True)
    print('# %d product files, %d lines; %d functions' % (len(files), sum(sizes.values()), len(funcs)))
    print('# largest files in %s (bound %d):' % (' '.join(FILE_SCOPE), FILE_MAX))
    for n, f in scoped[:SHOW]:
        print('#   %5d  %s%s' % (n, f, '  (known offender)' if f in KNOWN else ''))
    print('# largest functions in the product (bound %d):' % FUNC_MAX)
    for n, k in funcs[:SHOW]:
        print('#   %5d  %s%s' % (n, k, '  (known offender)' if k in KNOWN else ''))

    over = {f: n for n, f in scoped if n > FILE_MAX}
    over.update({k: n for n, k in funcs if n > FUNC_MAX})
    for k, n in sorted(over.items()):
        if k not in KNOWN:
            bound = FUNC_MAX if ':' in k else FILE_MAX
            problems.append('%s: %d lines, over the bound of %d (split it; the list of known offenders only shrinks)'
                            % (k, n, bound))
    for k in sorted(KNOWN - set(over)):
        problems.append('%s: listed as a known offender but within its bound now: take it off KNOWN in %s'
                        % (k, 'tests/scripts/bounds_check.py'))
    print('# %d known offenders (%d files, %d functions)' %
          (len(KNOWN), sum(1 for k in KNOWN if ':' not in k), sum(1 for k in KNOWN if ':' in k)))
    for p in problems:
        print(p)
    return 1 if problems else 0


sys.exit(main())
