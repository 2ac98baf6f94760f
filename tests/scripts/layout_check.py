#!/usr/bin/env python3
"""The include graph of the product's code: every #include names its folder, no folder
includes from a layer above it (or from a sibling it must not see), and no header
includes itself through others. Prints one line per problem; exits 1 if any.

Layers, low to high (docs/hacking.md, "Layout"): a file may include its own layer and the ones below.
The signer, the workers and the recorder are siblings that never include each other: the
worker binary must link without the signer's code, the signer must not depend on what runs
jailed, and the database clients (the recorder's) never run in the signer. The files of the state
directory (gateway/state/) sit below the signer and the CLI, which both use them; the workers and
the recorder are siblings of gateway/state/ and never include it."""
import os, re, subprocess, sys

LAYERS = [  # (folder prefix, rank, sibling group)
    ('include/assent/', 0, None), ('common/', 1, None), ('ledger/', 2, None), ('policy/', 2, None),
    ('verify/', 3, None), ('gateway/proto/', 4, None), ('gateway/state/', 5, 'state'),
    ('gateway/signer/', 6, 'signer'),
    ('gateway/worker/', 6, 'worker'), ('gateway/recorder/', 6, 'recorder'), ('gateway/cli/', 7, None),
]
# The state directory's files (gateway/state/) are read and written by the signer and the CLI only:
# a jailed worker or the recorder never sees them.
SEES = {'signer': {'state'}}

def layer(path):
    for prefix, rank, group in LAYERS:
        if path.startswith(prefix):
            return prefix, rank, group
    return None

def main():
    root = subprocess.check_output(['git', 'rev-parse', '--show-toplevel'], text=True).strip()
    os.chdir(root)
    files = [f for f in subprocess.check_output(['git', 'ls-files', '*.c', '*.h'], text=True).split()
             if layer(f)]
    problems, edges = [], {}
    for f in files:
        me = layer(f)
        edges[f] = []
        for n, line in enumerate(open(f, errors='replace'), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            if f.startswith('include/assent/'):
                target = 'include/assent/' + inc  # installed headers include each other by bare name
            else:
                target = inc
            if not os.path.exists(target):
                problems.append('%s:%d: #include "%s" does not name a file from the top (one -I.)' % (f, n, inc))
                continue
            it = layer(target)
            if not it:
                problems.append('%s:%d: #include "%s" is outside the product\'s folders' % (f, n, inc))
                continue
            if it[1] > me[1] or (it[2] and me[2] and it[2] != me[2] and it[2] not in SEES.get(me[2], ())):
                problems.append('%s:%d: %s includes %s, a layer it must not see' % (f, n, me[0], target))
            edges[f].append(target)
    # cycles among headers (a .c file is never included)
    state = {}
    def visit(h, stack):
        state[h] = 1
        for t in edges.get(h, []):
            if state.get(t) == 1:
                problems.append('include cycle: ' + ' -> '.join(stack[stack.index(t):] + [t]) if t in stack else t)
            elif not state.get(t):
                visit(t, stack + [t])
        state[h] = 2
    for h in sorted(edges):
        if h.endswith('.h') and not state.get(h):
            visit(h, [h])
    for p in problems:
        print(p)
    return 1 if problems else 0

sys.exit(main())
