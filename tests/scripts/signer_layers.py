#!/usr/bin/env python3
"""The signer's layers, by the calls between its files (docs/hacking.md, "The signer's layers"):

  core          gateway/signer/core/: calls no function defined outside it (in the signer)
  capabilities  the other files of gateway/signer/: call the core and each other's public
                functions, never the loop's, and never in a cycle
  loop          LOOP below: may call anything

A call is a function name followed by '(' or a function named where a pointer to it is
taken (an argument, an initializer), outside comments and strings; the functions are the
non-static ones ctags finds in gateway/signer/. What the core must tell a capability it
learns from what the capability registered (core/events.c, core/supervise.c), not by calling
it. Prints the figures as '# ' lines (files per layer, the largest cycle among the
capabilities), then one line per problem; exits 1 if any."""
import json, os, re, subprocess, sys

SIGNER = 'gateway/signer/'
CORE = 'gateway/signer/core/'
LOOP = {'gateway/signer/loop.c', 'gateway/signer/start.c', 'gateway/signer/front.c',
        'gateway/signer/testseam.c'}


def layer(f):
    return 'core' if f.startswith(CORE) else 'loop' if f in LOOP else 'capability'


def strip(src):
    src = re.sub(r'/\*.*?\*/', ' ', src, flags=re.S)
    src = re.sub(r'//[^\n]*', ' ', src)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', src)


def main():
    root = subprocess.check_output(['git', 'rev-parse', '--show-toplevel'], text=True).strip()
    os.chdir(root)
    files = [f for f in subprocess.check_output(['git', 'ls-files', SIGNER + '*.c'], text=True).split()]
    out = subprocess.check_output(['ctags', '--output-format=json', '--fields=+nS', '--kinds-C=f',
                                   '--language-force=C', '-o', '-'] + files, text=True)
    defs = {}
    for line in out.splitlines():
        t = json.loads(line)
        if t.get('_type') != 'tag':
            continue
        src = open(t['path']).read()
        if re.search(r'^static\b[^;{]*\b%s\s*\(' % re.escape(t['name']), src, re.M):
            continue
        defs[t['name']] = t['path']
    edges, problems = {}, []
    for f in files:
        src = strip(open(f).read())
        names = set(re.findall(r'\b([A-Za-z_]\w*)\s*\(', src))
        names |= set(re.findall(r'[,(={]\s*&?([A-Za-z_]\w*)\s*(?=[,)};])', src))
        edges[f] = {}
        for w in names:
            g = defs.get(w)
            if g and g != f:
                edges[f].setdefault(g, []).append(w)
    # the core's includes: its own headers and the state's types, never a capability's header
    core_ok = re.compile(r'gateway/signer/(core/|types\.h$|signer\.h$)')
    for f in subprocess.check_output(['git', 'ls-files', CORE + '*.[ch]'], text=True).split():
        for n, line in enumerate(open(f), 1):
            m = re.match(r'\s*#\s*include\s+"(gateway/signer/[^"]+)"', line)
            if m and not core_ok.match(m.group(1)):
                problems.append('%s:%d: the core includes %s, a header above it' % (f, n, m.group(1)))
    for f in files:
        for g, ws in sorted(edges[f].items()):
            lf, lg = layer(f), layer(g)
            if (lf == 'core' and lg != 'core') or (lf == 'capability' and lg == 'loop'):
                problems.append('%s (%s) calls %s of %s (%s): a layer above it' %
                                (f, lf, ', '.join(sorted(ws)), g, lg))
    # cycles among the capabilities (Tarjan)
    caps = [f for f in files if layer(f) == 'capability']
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if layer(w) != 'capability':
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            s = []
            while True:
                w = stack.pop()
                on.discard(w)
                s.append(w)
                if w == v:
                    break
            sccs.append(s)
    for f in caps:
        if f not in index:
            visit(f)
    count = {k: sum(1 for f in files if layer(f) == k) for k in ('core', 'capability', 'loop')}
    print('# signer files: %d core, %d capabilities, %d loop' % (count['core'], count['capability'], count['loop']))
    big = max(sccs, key=len) if sccs else []
    print('# largest cycle of calls among the capabilities: %s' %
          ('%d files (%s)' % (len(big), ' '.join(sorted(os.path.basename(x) for x in big))) if len(big) > 1 else 'none'))
    for c in sccs:
        if len(c) > 1:
            problems.append('a cycle of calls among the capabilities: %s (break it with a hook the core runs)' %
                            ' '.join(sorted(c)))
    for p in problems:
        print(p)
    return 1 if problems else 0


sys.exit(main())
