// TAP for the node test drivers: ok() prints one line per check; step(desc, fn) is one line
// whose fn returns true/false or throws (its message is shown); must() throws. Numbering
// starts after `from` (a driver whose lines a parent script goes on counting).
export function tap(from = 0) {
  const t = { n: from, failed: 0 };
  t.ok = (cond, desc) => { t.n++; if (!cond) t.failed++; console.log(`${cond ? "ok" : "not ok"} ${t.n} - ${desc}`); return !!cond; };
  t.step = async (desc, fn) => {
    try {
      const r = await fn();
      return t.ok(r !== false, desc + (typeof r === "string" ? ` (${r})` : ""));
    } catch (e) {
      return t.ok(false, `${desc}: ${String(e?.message ?? e).split("\n")[0].slice(0, 300)}`);
    }
  };
  t.end = () => { console.log(`1..${t.n}`); process.exit(t.failed ? 1 : 0); };
  return t;
}
export const must = (cond, what) => { if (!cond) throw new Error(what); };
