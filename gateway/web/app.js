// The reviewer's page: log in with a reviewer token, watch the queue live (server-sent
// events), decide. Everything a request carries was written by an agent, so it reaches
// the page only as text nodes (textContent, append(string)), never as markup.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const S = { csrf: "", reviewer: "", offset: 0, from: 0, es: null, debounce: 0, gen: 0, cards: new Map(), known: new Set(), seenOnce: false, linked: null };
  // The session's secret lives in this tab's sessionStorage and travels in the
  // Authorization header, never in a cookie: a page on any other port of this host
  // can set cookies for it (cookies are not isolated by port), but none can read or
  // write this origin's storage or set this page's headers. gateway/web/README.md.
  const SESSION_KEY = "assent_session";
  const session = {
    get: () => { try { return sessionStorage.getItem(SESSION_KEY) || ""; } catch (e) { return ""; } },
    set: (v) => { try { sessionStorage.setItem(SESSION_KEY, v); } catch (e) { /* private mode: this page only */ } },
    clear: () => { try { sessionStorage.removeItem(SESSION_KEY); } catch (e) { /* nothing kept */ } },
  };
  const authHeaders = () => (session.get() ? { Authorization: `Bearer ${session.get()}` } : {});
  const OUTCOME = { approve: "approved", reject: "rejected", answer: "answered", select: "selected" };
  const LONG_CONTEXT = 1500; // characters of pretty JSON shown open; longer ones are collapsed
  const TEXT_MAX = 65536;    // characters of a subject's text shown
  const HEX_MAX = 256;       // bytes of a binary subject shown
  let uid = 0;

  // el("tag", {attr: value, class, text}, ...children): children that are strings become text.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids) if (k !== null && k !== undefined && k !== false) e.append(k);
    return e;
  }

  // Control, bidirectional and invisible characters (the set common/text.c neutralises for
  // the CLI): text nodes cannot run them, but they reorder or hide what is approved. Each
  // is shown as a marked \uXXXX instead (span.hidden-char, highlighted by app.css).
  // shown(v, lines): the nodes to append for v; lines keeps newline, tab and \r\n.
  // The same set as common/text.c's text_hidden_cp: controls, bidi, zero-width, and every
  // default-ignorable or format character (tag characters spell hidden ASCII), by code point.
  const HIDDEN_SET = "\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f" +
    "\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufffb" +
    "\\u{1bca0}-\\u{1bca3}\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e0fff}";
  const HIDDEN = new RegExp(`[${HIDDEN_SET}]`, "u"), HIDDEN_ONE = new RegExp(`^[${HIDDEN_SET}]$`, "u");
  function shown(v, lines) {
    const s = String(v ?? ""), out = [];
    let start = 0, i = 0;
    for (const c of s) { // by code point: a tag character is two UTF-16 units
      const at = i;
      i += c.length;
      if (!HIDDEN_ONE.test(c) || (lines && (c === "\n" || c === "\t" || (c === "\r" && s[i] === "\n")))) continue;
      if (at > start) out.push(s.slice(start, at));
      const hex = c.codePointAt(0).toString(16), code = hex.length > 4 ? `\\u{${hex}}` : "\\u" + hex.padStart(4, "0");
      out.push(el("span", { class: "hidden-char", title: `a hidden character (U+${hex.toUpperCase().padStart(4, "0")}) was here`, text: code }));
      start = i;
    }
    if (start < s.length || !out.length) out.push(s.slice(start));
    return out;
  }
  // el() with agent text as its content, neutralised.
  const elShown = (tag, attrs, v, lines) => el(tag, attrs, ...shown(v, lines));

  function status(msg, isError) {
    const s = $("status");
    s.textContent = msg;
    s.classList.toggle("error", !!isError);
  }

  async function api(method, path, body) {
    const headers = authHeaders();
    // credentials "omit": no cookie goes out, so none planted by another page counts.
    const init = { method, headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (method === "POST" && S.csrf) headers["X-CSRF-Token"] = S.csrf;
    let res, data = null;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw Object.assign(new Error("the gateway cannot be reached"), { status: 0 });
    }
    try { data = await res.json(); } catch (e) { /* not JSON: the status says enough */ }
    if (!res.ok) {
      const msg = data && typeof data.error === "string" ? data.error : `HTTP ${res.status}`;
      throw Object.assign(new Error(msg), { status: res.status, retryAfter: res.headers.get("Retry-After") });
    }
    return data || {};
  }

  // ---- session ----
  function signedIn(me) {
    if (typeof me.session === "string" && me.session) session.set(me.session);
    S.csrf = me.csrf || "";
    S.reviewer = me.reviewer || "";
    $("who").textContent = `Signed in as ${S.reviewer}` + (me.via === "proxy" ? " (through the proxy)" : "");
    $("who").hidden = $("logout").hidden = $("passkey-add").hidden = $("passkeys").hidden = $("app").hidden = false;
    loadPasskeys();
    $("login").hidden = true;
    notifyButton();
    compactToggle();
    openEvents();
    refresh();
  }

  function signedOut(msg, isError) {
    closeEvents();
    session.clear();
    S.csrf = S.reviewer = "";
    S.gen++;
    for (const c of S.cards.values()) c.el.remove();
    S.cards.clear();
    $("recent").replaceChildren();
    $("history").tBodies[0].replaceChildren();
    $("chart").replaceChildren();
    S.histSeq = S.histPending = undefined;
    S.histLoaded = false;
    $("who").hidden = $("logout").hidden = $("passkey-add").hidden = $("passkeys").hidden = $("app").hidden = true;
    $("login").hidden = false;
    if (msg) status(msg, isError);
  }

  async function checkSession() {
    try {
      signedIn(await api("GET", "/review/api/me"));
    } catch (e) {
      if (e.status === 401) signedOut(S.reviewer ? "Your session ended: log in again." : "");
      else { signedOut(`Cannot reach the gateway: ${e.message}`, true); setTimeout(checkSession, 5000); }
    }
  }

  $("login").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const form = ev.currentTarget, token = form.elements.token.value.trim();
    if (!token) return status("Paste your reviewer token first.", true);
    form.querySelector("button").disabled = true;
    try {
      const me = await api("POST", "/review/api/login", { token });
      form.reset();
      status(`Welcome, ${me.reviewer}.`);
      signedIn(me);
      $("pending-h").focus();
    } catch (e) {
      if (e.status === 429) status(`${e.message} (in ${e.retryAfter || "a few"} seconds).`, true);
      else status(`Login refused: ${e.message}`, true);
    } finally {
      form.querySelector("button").disabled = false;
    }
  });

  $("load-reports").addEventListener("click", () => loadReports());
  $("logout").addEventListener("click", async () => {
    try {
      await api("POST", "/review/api/logout", {});
      signedOut("Logged out.");
    } catch (e) {
      if (e.status === 401) signedOut("Logged out.");
      else status(`Logout failed: ${e.message}`, true);
    }
  });

  // ---- live queue ----
  // Server-sent events read with fetch: EventSource cannot send the session header.
  // A stream ends at logout, when the session ends (a rotated token, a removed
  // reviewer) and after its lifetime; the page then opens another, which the gateway
  // authenticates again (401: the session is over; 429: too many streams, wait).
  function closeEvents() {
    if (S.es) S.es.abort();
    S.es = null;
  }

  function openEvents() {
    closeEvents();
    const ac = new AbortController();
    S.es = ac;
    const again = (ms) => setTimeout(() => { if (S.es === ac) openEvents(); }, ms);
    (async () => {
      let res;
      try {
        res = await fetch("/review/events", { headers: { ...authHeaders(), Accept: "text/event-stream" },
          credentials: "omit", cache: "no-store", signal: ac.signal });
      } catch (e) {
        return again(2000);
      }
      if (res.status === 401) {
        if (S.es === ac) { S.es = null; checkSession(); }
        return;
      }
      if (!res.ok || !res.body) {
        let msg = `HTTP ${res.status}`;
        try { msg = (await res.json()).error || msg; } catch (e) { /* the status says enough */ }
        const wait = Math.max(2, Number(res.headers.get("Retry-After")) || 2);
        if (res.status === 429) status(`Live updates paused: ${msg}; trying again in ${wait} s.`, true);
        return again(wait * 1000);
      }
      if ($("status").textContent.startsWith("Live updates paused")) status("");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "", lifetime = false;
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf = (buf + value).replace(/\r\n?/g, "\n");
          for (let i; (i = buf.indexOf("\n\n")) >= 0; buf = buf.slice(i + 2)) {
            const name = (/^event: ?(.*)$/m.exec(buf.slice(0, i)) || [])[1];
            if (name === "pending") {
              clearTimeout(S.debounce);
              S.debounce = setTimeout(refresh, 100);
            }
            lifetime ||= name === "end";
          }
        }
      } catch (e) { /* aborted, or the connection was cut */ }
      again(lifetime ? 0 : 2000); // a stream that reached its lifetime is replaced at once
    })();
  }

  async function refresh() {
    const gen = ++S.gen;
    let data;
    try {
      data = await api("GET", "/review/api/pending" + (S.from ? `?offset=${S.from}` : "")); // a page of a big queue
    } catch (e) {
      if (e.status === 401) return signedOut("Your session ended: log in again.");
      return status(`Cannot load the queue: ${e.message}`, true);
    }
    if (gen !== S.gen) return; // a newer answer is on its way or was shown
    if (S.from && !(Array.isArray(data.requests) && data.requests.length)) { S.from = 0; return refresh(); } // decided meanwhile
    S.offset = (Number(data.now) || Date.now() / 1000) - Date.now() / 1000;
    const t0 = performance.now();
    renderQueue(data);
    renderRecent(Array.isArray(data.recent) ? data.recent : []);
    // A decision since, or another count of what waits (the chart counts pending requests as
    // asked): the history again, at most once a second however fast the queue moves.
    const newest = Array.isArray(data.recent) && data.recent.length ? data.recent[0].seq : -1, waiting = Number(data.pending) || 0;
    if (newest !== S.histSeq || waiting !== S.histPending) {
      S.histSeq = newest;
      S.histPending = waiting;
      if (!S.histTimer) S.histTimer = setTimeout(() => { S.histTimer = 0; loadHistory(); }, S.histLoaded ? 1000 : 0);
    }
    performance.measure("assent-render", { start: t0 }); // read by the web bench (make bench)
    if (S.cards.size && !S.painted) { // the first frame with requests in it
      S.painted = true;
      requestAnimationFrame(() => performance.mark("assent-first-render"));
    }
  }

  function renderQueue(data) {
    const list = $("requests"), reqs = Array.isArray(data.requests) ? data.requests : [];
    const seen = new Set();
    let prev = null, lostFocus = false;
    for (const r of reqs) {
      if (typeof r.session_id !== "string") continue;
      seen.add(r.session_id);
      let card = S.cards.get(r.session_id);
      if (!card) S.cards.set(r.session_id, (card = buildCard(r)));
      updateCard(card, r);
      const want = prev ? prev.nextSibling : list.firstChild;
      if (card.el !== want) list.insertBefore(card.el, want);
      prev = card.el;
    }
    for (const [sid, card] of S.cards) {
      if (seen.has(sid)) continue;
      if (card.el.contains(document.activeElement) || card.refocus) lostFocus = true;
      card.el.remove();
      S.cards.delete(sid);
    }
    const total = Number(data.pending) || reqs.length;
    $("count").textContent = `(${total})`;
    document.title = total ? `(${total}) assent: review` : "assent: review"; // seen from another tab
    notifyNew(reqs, total);
    $("empty").hidden = reqs.length > 0;
    const more = $("more"), page = (text, from) => el("button", { type: "button", text, "data-from": from });
    more.hidden = !(data.more > 0 || S.from > 0);
    more.replaceChildren(S.from ? `Requests ${S.from + 1} to ${S.from + reqs.length} of ${total} are shown. `
      : `The oldest ${reqs.length} are shown; ${data.more} more wait behind them. `,
    S.from > 0 ? page("First page", 0) : "", data.more > 0 ? page(`Next ${Math.min(data.more, reqs.length)}`, S.from + reqs.length) : "");
    more.onclick = (ev) => { const f = ev.target.dataset?.from; if (f !== undefined) { S.from = Number(f); refresh(); } };
    if (lostFocus) (list.querySelector("h3") || $("pending-h")).focus();
    showLinked();
    tick();
  }

  // A deep link /review#SESSION_ID opens that request: scrolled to, marked and focused, once per
  // hash; a request that is not (or no longer) in the queue says so in the status line.
  function showLinked() {
    const sid = decodeURIComponent(location.hash.slice(1));
    if (!sid) { for (const c of S.cards.values()) c.el.classList.remove("linked"); S.linked = null; return; }
    if (S.linked === sid) return;
    const card = S.cards.get(sid);
    if (!card) {
      if (!S.from) status(`Request ${sid} is not waiting (decided, expired or on another page); Recent decisions lists what was decided.`, false);
      S.linked = sid;
      return;
    }
    S.linked = sid;
    for (const c of S.cards.values()) c.el.classList.toggle("linked", c === card);
    card.el.scrollIntoView({ block: "start" });
    card.el.querySelector("h3")?.focus({ preventScroll: true });
  }
  addEventListener("hashchange", () => { S.linked = null; showLinked(); });

  // Browser notifications: asked for by the button only (never on load); once granted, a request
  // that arrives while this tab is hidden raises one notification naming how many wait.
  function notifyNew(reqs, total) {
    const fresh = reqs.filter((r) => typeof r.session_id === "string" && !S.known.has(r.session_id));
    for (const r of reqs) S.known.add(r.session_id);
    const first = !S.seenOnce;
    S.seenOnce = true;
    if (first || !fresh.length || !("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
    const n = new Notification(`assent: ${total} waiting`, { body: String(fresh[0].message ?? "a request").slice(0, 120), tag: "assent-pending" });
    n.onclick = () => { focus(); location.hash = fresh[0].session_id; n.close(); };
  }
  function notifyButton() {
    const b = $("notify");
    if (!("Notification" in window)) { b.hidden = true; return; }
    const show = () => {
      b.textContent = Notification.permission === "granted" ? "Notifications on" : Notification.permission === "denied" ? "Notifications blocked" : "Notify me";
      b.disabled = Notification.permission !== "default";
    };
    show();
    b.hidden = false;
    b.onclick = async () => { await Notification.requestPermission(); show(); };
  }

  // The compact list: one line a request (message, type, risk, time left) to triage many; the
  // choice is kept for this tab.
  function compactToggle() {
    const b = $("compact"), set = (on) => {
      $("requests").classList.toggle("compact", on);
      b.setAttribute("aria-pressed", String(on));
      b.textContent = on ? "Full cards" : "Compact list";
      sessionStorage.setItem("assent_compact", on ? "1" : "");
    };
    set(sessionStorage.getItem("assent_compact") === "1");
    b.onclick = () => set(!$("requests").classList.contains("compact"));
  }

  function renderRecent(recent) {
    $("recent").replaceChildren(...recent.map((d) => el("li", { "data-sid": d.session_id },
      el("span", { class: "seq", text: `seq ${d.seq}` }), " ",
      el("span", { class: `outcome ${cls(d.outcome)}`, text: String(d.outcome) }),
      d.by ? ` by ${d.by}` : "", d.at ? ` at ${new Date(d.at * 1000).toLocaleTimeString()}` : "",
      d.message ? elShown("span", { class: "msg" }, d.message, false) : "")));
  }

  // ---- the history: recent decisions with filters, each with its ledger seq and its proof, and
  // a chart of requests, decisions and time to decision per hour (GET /review/api/history) ----
  const SVG = "http://www.w3.org/2000/svg";
  // svg("rect", {x, y, width, height, class}, ...kids): attributes only, never style (the CSP).
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  const took = (ms) => {
    const s = Math.round(Number(ms) / 1000);
    if (!(s >= 0)) return "?";
    if (s < 60) return `${Math.max(0, Number(ms) / 1000).toFixed(s < 10 ? 1 : 0)} s`;
    if (s < 3600) return `${Math.round(s / 60)} min`;
    return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  };
  // a time of today as its time only, another day's with its date
  const when = (t) => {
    const d = new Date(t * 1000);
    return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
  };
  const hourLabel = (t) => new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

  function historyQuery() {
    const f = $("history-filters").elements, q = new URLSearchParams();
    for (const k of ["who", "outcome", "audience", "rule"]) if (f[k].value.trim()) q.set(k, f[k].value.trim());
    if (f.range.value) q.set("since", String(Math.floor(Date.now() / 1000 + S.offset - Number(f.range.value))));
    q.set("limit", "200");
    return q.toString();
  }

  async function loadHistory() {
    const gen = (S.histGen = (S.histGen || 0) + 1);
    let d;
    try {
      d = await api("GET", "/review/api/history?" + historyQuery());
    } catch (e) {
      if (e.status === 401) return signedOut("Your session ended: log in again.");
      $("history-note").textContent = `Cannot load the history: ${e.message}`;
      $("history-note").classList.add("error");
      return;
    }
    if (gen !== S.histGen) return; // a newer one was asked for
    S.histLoaded = true;
    $("history-note").classList.remove("error");
    const rows = Array.isArray(d.decisions) ? d.decisions : [];
    $("history-note").textContent = rows.length
      ? `${rows.length === d.matched ? rows.length : `The newest ${rows.length} of ${d.matched}`} decision${d.matched === 1 ? "" : "s"} match, of the ${d.kept} kept (the gateway keeps the last ${d.kept_max} in memory; the ledger keeps them all).`
      : `No decision matches, of the ${Number(d.kept) || 0} kept.`;
    $("history").tBodies[0].replaceChildren(...rows.map(historyRow));
    drawChart(Array.isArray(d.hours) ? d.hours : []);
  }

  function historyRow(x) {
    const seq = Number(x.seq), a = el("a", { href: `/review/api/proof?seq=${seq}`, class: "proof", download: `assent-entry-${seq}.proof`,
      title: `the inclusion proof of ledger entry ${seq}: assent-verify proof --check FILE --key checkpoint.pub`, text: "proof" });
    a.addEventListener("click", (ev) => { ev.preventDefault(); downloadProof(seq); });
    return el("tr", { "data-sid": x.session_id, "data-seq": seq },
      el("td", { class: "seq", text: String(seq) }),
      el("td", { class: "num", text: when(Number(x.decided_at)) }),
      el("td", {}, el("span", { class: `outcome ${cls(x.outcome)}`, text: String(x.outcome) })),
      elShown("td", { class: "by" }, String(x.by ?? ""), false),
      elShown("td", {}, String(x.requester ?? ""), false),
      elShown("td", {}, x.audience ? String(x.audience) : "", false),
      el("td", { class: "num", text: x.rule ? String(x.rule) : "" }),
      el("td", { class: "num", text: took(x.decision_ms) }),
      elShown("td", { class: "msg" }, String(x.message ?? ""), false),
      el("td", {}, a));
  }

  // The proof needs the session's header, which a plain link cannot send: fetched, then saved.
  async function downloadProof(seq) {
    let res;
    try {
      res = await fetch(`/review/api/proof?seq=${seq}`, { headers: authHeaders(), credentials: "omit", cache: "no-store" });
    } catch (e) {
      return status("Cannot reach the gateway for the proof.", true);
    }
    if (!res.ok) {
      let msg = `HTTP ${res.status}`;
      try { msg = (await res.json()).error || msg; } catch (e) { /* the status says enough */ }
      return status(`No proof of entry ${seq}: ${msg}`, true);
    }
    const url = URL.createObjectURL(await res.blob()), a = el("a", { href: url, download: `assent-entry-${seq}.proof`, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status(`The proof of entry ${seq} is saved: assent-verify proof --check assent-entry-${seq}.proof --key checkpoint.pub`);
  }

  // Bars of requests (asked that hour) and decisions (timeouts in red on top) on the left
  // scale; the reviewers' median time to decision as a line, the 90th percentile as rings,
  // on the right one. Drawn from the API's figures only: no library, no CDN.
  function drawChart(hours) {
    const W = 720, H = 230, L = 34, R = 54, T = 22, B = 26, pw = W - L - R, ph = H - T - B;
    const n = hours.length || 24, slot = pw / n, bw = Math.max(2, slot * 0.36);
    const maxN = Math.max(1, ...hours.map((h) => Math.max(Number(h.requests) || 0, Number(h.decisions) || 0)));
    const top = maxN <= 5 ? maxN : Math.ceil(maxN / 5) * 5;
    const maxMs = Math.max(1000, ...hours.map((h) => Number(h.p90_ms ?? h.p50_ms) || 0));
    const y = (v) => T + ph - (ph * v) / top, yt = (ms) => T + ph - (ph * ms) / maxMs;
    const g = svg("g", {});
    g.append(svg("line", { class: "axis", x1: L, y1: T + ph, x2: L + pw, y2: T + ph }),
      svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: T + ph }), svg("line", { class: "axis", x1: L + pw, y1: T, x2: L + pw, y2: T + ph }));
    for (const v of [0, top / 2, top]) if (v === Math.round(v)) g.append(svg("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, String(v)));
    for (const ms of [0, maxMs / 2, maxMs]) g.append(svg("text", { x: L + pw + 4, y: yt(ms) + 4 }, took(ms)));
    const pts = [];
    let any = false;
    hours.forEach((h, i) => {
      const x0 = L + i * slot + (slot - 2 * bw) / 2, req = Number(h.requests) || 0, dec = Number(h.decisions) || 0, to = Math.min(dec, Number(h.timeouts) || 0);
      const tip = `${hourLabel(h.hour)}: ${req} asked, ${dec} decided` + (to ? ` (${to} timed out)` : "") +
        (h.p50_ms !== undefined ? `; reviewers took ${took(h.p50_ms)} (median), ${took(h.p90_ms)} (90th percentile)` : "");
      if (req) g.append(svg("rect", { class: "bar-req", x: x0, y: y(req), width: bw, height: y(0) - y(req) }, svg("title", {}, tip)));
      if (dec - to) g.append(svg("rect", { class: "bar-dec", x: x0 + bw, y: y(dec - to), width: bw, height: y(0) - y(dec - to) }, svg("title", {}, tip)));
      if (to) g.append(svg("rect", { class: "bar-to", x: x0 + bw, y: y(dec), width: bw, height: y(dec - to) - y(dec) }, svg("title", {}, tip)));
      any ||= req > 0 || dec > 0;
      const cx = L + (i + 0.5) * slot;
      if (h.p50_ms !== undefined) {
        pts.push(`${cx.toFixed(1)},${yt(Number(h.p50_ms)).toFixed(1)}`);
        g.append(svg("circle", { class: "ttd-dot", cx: cx.toFixed(1), cy: yt(Number(h.p50_ms)).toFixed(1), r: 3.5 }, svg("title", {}, tip)));
        if (h.p90_ms !== undefined) g.append(svg("circle", { class: "ttd-p90", cx: cx.toFixed(1), cy: yt(Number(h.p90_ms)).toFixed(1), r: 3 }, svg("title", {}, tip)));
      }
      if (i % 3 === 0 || i === n - 1) g.append(svg("text", { x: cx, y: H - 8, "text-anchor": "middle" }, i === n - 1 ? "now" : hourLabel(h.hour)));
    });
    if (pts.length > 1) g.append(svg("polyline", { class: "ttd-line", points: pts.join(" ") }));
    if (!any) g.append(svg("text", { x: L + pw / 2, y: T + ph / 2, "text-anchor": "middle" }, "Nothing asked or decided in the last 24 hours."));
    const legend = [["legend-req", "asked"], ["legend-dec", "decided"], ["legend-to", "timed out"], ["legend-ttd", "reviewers' time to decision (median; rings: 90th pct)"]];
    let lx = L;
    for (const [c, t] of legend) {
      g.append(svg("rect", { class: c, x: lx, y: 4, width: 10, height: 10 }), svg("text", { x: lx + 14, y: 13 }, t));
      lx += 24 + t.length * 6;
    }
    const sum = (k) => hours.reduce((a, h) => a + (Number(h[k]) || 0), 0);
    const last = [...hours].reverse().find((h) => h.p50_ms !== undefined);
    const label = `Last 24 hours: ${sum("requests")} requests asked, ${sum("decisions")} decided, ${sum("timeouts")} timed out` +
      (last ? `; the latest hour with reviewers' decisions had a median time to decision of ${took(last.p50_ms)}` : "");
    $("chart").replaceChildren(svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": label },
      svg("title", {}, label), g));
  }

  // A long queue puts the history far down: one button takes the keyboard's focus there.
  $("to-history").addEventListener("click", () => { $("history-h").scrollIntoView({ block: "start" }); $("history-h").focus({ preventScroll: true }); });
  $("history-filters").addEventListener("submit", (ev) => { ev.preventDefault(); loadHistory(); });
  $("history-filters").addEventListener("change", () => loadHistory());
  $("history-filters").addEventListener("reset", () => setTimeout(loadHistory, 0));

  function tick() {
    const now = Date.now() / 1000 + S.offset;
    for (const c of S.cards.values()) {
      if (!c.deadline) { c.left.textContent = "no deadline"; continue; }
      const s = Math.floor(c.deadline - now);
      c.left.textContent = s <= 0 ? "deadline passed" : `${clock(s)} left`;
      c.left.classList.toggle("urgent", s < 60);
    }
  }
  setInterval(tick, 1000);

  const clock = (s) => {
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = String(s % 60).padStart(2, "0");
    return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
  };
  const cls = (v) => (/^[a-z]+$/.test(String(v)) ? String(v) : "other");

  // ---- one request ----
  function buildCard(r) {
    const left = el("span", { class: "left" });
    const approvals = el("dd", {});
    const head = elShown("h3", { tabindex: "-1" }, r.message, true);
    head.onclick = () => { if ($("requests").classList.contains("compact")) head.parentNode.classList.toggle("open"); };
    const meta = el("p", { class: "meta" }, el("span", { class: "type", text: String(r.type) }), " ",
      r.risk ? elShown("span", { class: `risk risk-${cls(String(r.risk).toLowerCase())}` }, `risk ${r.risk}`, false) : "", " ", left);
    const facts = el("dl", { class: "facts" },
      el("dt", { text: "From" }), elShown("dd", {}, requester(r.requester), false),
      el("dt", { text: "Audience" }), elShown("dd", {}, r.audience ? r.audience : "any (none given)", false),
      el("dt", { text: "Policy" }), el("dd", { text: policy(r.policy) }),
      el("dt", { text: "Approvals" }), approvals,
      el("dt", { text: "Asked" }), el("dd", { text: r.created ? new Date(r.created * 1000).toLocaleString() : "?" }),
      el("dt", { text: "Session" }), el("dd", { class: "mono", text: r.session_id }));
    const article = el("article", { class: "request", "data-sid": r.session_id }, maskedNote(r), head, meta, facts,
      r.type === "call" ? callBlock(r) : null, contextBlock(r.context), subjectsBlock(r.subject),
      eventsBlock(r.session_id), decideForm(r));
    return { el: article, left, approvals, deadline: Number(r.deadline) || 0 };
  }

  // Said first on the card (issue 28): the view differs from what runs only in marks that say
  // how much they hide; a gated call's exact arguments are one reveal away (ledgered).
  function maskedNote(r) {
    const m = r.masked, ctx = r.context, notes = [];
    if (m && typeof m === "object")
      notes.push(`This view hides ${Number(m.chars) || 0} characters of secrets in ${Number(m.spans) || 0} marked ` +
        `span(s), each shown as [secret: N chars].` + (r.type === "call"
          ? ` Everything else is exactly what will run. Reveal shows the exact arguments (also: assent show --full ${r.session_id}); the ledger records that you did.`
          : " The agent's own text was masked before the daemon saw it, so it cannot be revealed."));
    if (ctx && typeof ctx === "object" && ctx.truncated === true)
      notes.push(`The context was cut for length: ${Number(ctx.total_bytes) || 0} bytes in all, the head shown.`);
    if (!notes.length) return null;
    const box = el("div", { class: "masked", role: "note" }, el("p", { text: notes.join(" ") }));
    if (r.type === "call" && m && typeof m === "object") {
      const out = el("div", { class: "revealed" });
      const b = el("button", { type: "button", class: "reveal", text: "Reveal the exact call" });
      b.onclick = () => reveal(r, b, out);
      box.append(b, out);
    }
    return box;
  }

  // The exact arguments, once the signer has ledgered the reveal (POST /review/api/reveal).
  async function reveal(r, b, out) {
    b.disabled = true;
    try {
      const a = await api("POST", "/review/api/reveal", { session_id: r.session_id });
      out.replaceChildren(el("p", { class: "meta", text: `Exact arguments of ${a.tool} on ${a.upstream} (revealed to ${S.reviewer}, ledger seq ${a.reveal_seq}):` }),
        elShown("pre", { class: "exact" }, JSON.stringify(a.arguments, null, 2), true),
        ...(a.input ? [el("p", { class: "meta", text: "The client's answers to the server's questions:" }),
          elShown("pre", { class: "exact" }, JSON.stringify(a.input, null, 2), true)] : []));
      b.remove();
      status(`Revealed the exact call of "${short(r.message)}" (ledger seq ${a.reveal_seq}).`);
    } catch (e) {
      b.disabled = false;
      if (e.status === 401) return signedOut("Your session ended: log in again.", true);
      status(`Not revealed: ${e.message}`, true);
    }
  }

  function updateCard(card, r) {
    const q = Number(r.quorum) || 1, who = Array.isArray(r.approvals) ? r.approvals.map(String) : [];
    card.approvals.textContent = `${who.length} of ${q}` + (who.length ? `: ${who.join(", ")}` : "") +
      (who.includes(S.reviewer) && who.length < q ? " (yours is counted; waiting for another reviewer)" : "");
    card.deadline = Number(r.deadline) || 0;
  }

  // Who asked: the agent's key (or the agent its uid is registered as), or anonymous; the uid the
  // signer measured (stdio, and HTTP on loopback); then the client name, only what the agent says.
  function requester(rq) {
    if (!rq || typeof rq !== "object") return "unknown";
    const who = [];
    if (rq.agent !== undefined) who.push(`agent ${rq.agent}`);
    else if (rq.anonymous) who.push("anonymous");
    if (rq.uid !== undefined) who.push(`local uid ${rq.uid}`);
    if (!who.length) return JSON.stringify(rq);
    return who.join(", ") + (rq.client ? `, client ${rq.client}${/\(declared\)$/.test(rq.client) ? "" : " (declared)"}` : "");
  }

  function policy(p) {
    if (!p || typeof p !== "object") return "no policy rule (every request waits for a person)";
    const rule = p.rule === undefined || p.rule === null ? "default rule" : `rule ${p.rule}`;
    const who = Array.isArray(p.reviewers) && p.reviewers.length ? `reviewers ${p.reviewers.join(", ")}` : "any reviewer";
    return `${rule}; ${who}` + (p.digest ? `; policy ${String(p.digest).slice(0, 16)}` : "");
  }

  // ---- context: pretty JSON, diffs shown as diffs, long ones collapsed ----
  const isDiff = (s) => typeof s === "string" && (/^@@ /m.test(s) || (/^--- /m.test(s) && /^\+\+\+ /m.test(s)));
  const isCut = (v) => v && typeof v === "object" && v.truncated === true && "total_bytes" in v && "head" in v;

  function diffBlock(s) {
    return el("span", { class: "diff" }, ...s.split("\n").map((line) => {
      const k = /^(\+\+\+ |--- )/.test(line) ? "file" : line.startsWith("@@") ? "hunk"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
      return elShown("span", { class: k }, line || " ", true);
    }));
  }

  // Appends v as indented JSON text to out; collects truncation markers in marks.
  function json(v, depth, out, marks) {
    if (isCut(v)) {
      const m = `…[truncated ${v.total_bytes} bytes]`;
      marks.push(m);
      const h = v.head; // a prefix of the value's text (of its compact JSON when not a string)
      if (typeof h === "string") out.append(isDiff(h) ? diffBlock(h) : el("span", {}, ...shown(h, true)));
      out.append(el("span", { class: "trunc", text: ` ${m}` }));
    } else if (isDiff(v)) {
      out.append(diffBlock(v));
    } else if (typeof v === "string" && v.includes("\n")) { // SQL, plan output: its lines, not "\n"s
      const m = v.match(/…\[truncated \d+ bytes\]/);
      if (m) marks.push(m[0]);
      out.append(el("span", { class: "text-block" }, ...shown(v, true)));
    } else if (v !== null && typeof v === "object") {
      const arr = Array.isArray(v), items = arr ? v.map((x) => [null, x]) : Object.entries(v);
      if (!items.length) return out.append(arr ? "[]" : "{}");
      out.append(arr ? "[\n" : "{\n");
      items.forEach(([k, x], i) => {
        out.append("  ".repeat(depth + 1), ...shown(k === null ? "" : `${JSON.stringify(k)}: `, true));
        json(x, depth + 1, out, marks);
        out.append(i < items.length - 1 ? ",\n" : "\n");
      });
      out.append("  ".repeat(depth) + (arr ? "]" : "}"));
    } else {
      const t = JSON.stringify(v) ?? String(v);
      const m = typeof v === "string" && v.match(/…\[truncated \d+ bytes\]/);
      if (m) marks.push(m[0]);
      out.append(...shown(t, true));
    }
  }

  function contextBlock(ctx) {
    if (ctx === undefined || ctx === null) return null;
    const pre = el("pre", { class: "context" }), marks = [];
    if (typeof ctx === "string" && !isDiff(ctx)) pre.append(...shown(ctx, true));
    else json(ctx, 0, pre, marks);
    const cut = marks.length ? el("p", { class: "trunc", text: `Cut by the gateway: ${marks.join(", ")}` }) : null;
    const size = pre.textContent.length;
    if (size <= LONG_CONTEXT && pre.textContent.split("\n").length <= 40)
      return el("div", { class: "block" }, el("h4", { text: "Context" }), cut, pre);
    return el("div", { class: "block" }, cut,
      el("details", {}, el("summary", { text: `Context (${size} characters${marks.length ? ", cut" : ""})` }), pre));
  }

  // ---- a gated call: the upstream's tool as its server describes it, the exact call's
  // digest, and its arguments (secrets redacted by the gateway) as the context is shown ----
  function callBlock(r) {
    const ti = r.tool_info && typeof r.tool_info === "object" ? r.tool_info : {};
    const an = ti.annotations && typeof ti.annotations === "object" ? ti.annotations : {};
    const hints = Object.keys(an).filter((k) => an[k] === true);
    const pre = el("pre", { class: "context arguments" }), marks = [];
    json(r.arguments ?? {}, 0, pre, marks);
    return el("div", { class: "block call" },
      el("h4", { text: "Tool call" }),
      el("dl", { class: "facts" },
        el("dt", { text: "Upstream" }), elShown("dd", { class: "mono" }, String(r.upstream ?? "?"), false),
        el("dt", { text: "Tool" }), elShown("dd", { class: "mono" }, String(r.tool ?? "?") +
          (ti.title ? ` (${ti.title})` : ""), false),
        ti.description ? el("dt", { text: "Description" }) : "",
        ti.description ? elShown("dd", {}, String(ti.description), true) : "",
        el("dt", { text: "Hints" }), elShown("dd", {}, hints.length ? `${hints.join(", ")} (declared by the server, not verified)`
          : "none declared", false),
        el("dt", { text: "Call digest" }), elShown("dd", { class: "mono" }, String(r.call ?? "?"), false)),
      el("h4", { text: "Arguments" }), pre, ...editsBlock(r.arguments), ...inputBlock(r.input));
  }

  // A retry's answers to the server's questions (MCP 2026-07-28 inputResponses): they run
  // with the call, so they are shown as its arguments are.
  function inputBlock(input) {
    if (!input || typeof input !== "object") return [];
    const pre = el("pre", { class: "context arguments input" }), marks = [];
    json(input, 0, pre, marks);
    return [el("h4", { text: "The client's answers to the server's questions" }), pre];
  }

  // A file edit's {oldText, newText} pairs (the filesystem servers' edit_file), again as a diff
  // of those texts after the arguments it is drawn from, as `assent show` prints them.
  function editsBlock(args) {
    const edits = args && typeof args === "object" ? args.edits : null;
    if (!Array.isArray(edits) || !edits.length ||
        !edits.every((e) => e && typeof e.oldText === "string" && typeof e.newText === "string")) return [];
    const path = typeof args.path === "string" ? args.path : "?";
    const lines = [`--- ${path} (now)`, `+++ ${path} (after the call)`];
    edits.forEach((e, i) => {
      lines.push(`@@ edit ${i + 1} of ${edits.length} @@`);
      for (const l of e.oldText.split("\n")) lines.push(`-${l}`);
      for (const l of e.newText.split("\n")) lines.push(`+${l}`);
    });
    return [el("h4", { text: "Edits, as a diff of the arguments above" }),
      el("pre", { class: "context edits" }, diffBlock(lines.join("\n")))];
  }

  // ---- the call records: a request's events, the QA reports with the calls behind them ----
  function eventsBlock(sid) {
    const list = el("ol", { class: "events" });
    const box = el("details", { class: "block events" }, el("summary", { text: "Events" }), list);
    box.addEventListener("toggle", async () => {
      if (!box.open) return;
      try {
        const d = await api("POST", "/review/api/qa", { op: "events", key: sid });
        const evs = Array.isArray(d.events) ? d.events : [];
        list.replaceChildren(...(evs.length ? evs.map((e) => elShown("li", {},
          `${String(e.occurred_at ?? "")}  ${String(e.kind ?? "")}  by ${String(e.user_sub ?? "?")}  ` +
          JSON.stringify(e.attrs ?? {}), false))
          : [el("li", { text: "No events recorded for this request yet." })]));
      } catch (e) {
        list.replaceChildren(el("li", { class: "error", text: `Cannot load the events: ${e.message}` }));
      }
    });
    return box;
  }

  function reportCalls(calls) {
    return el("ol", { class: "calls" }, ...calls.map((c) => elShown("li", { class: `outcome-${cls(c.outcome)}` },
      `${String(c.started_at ?? "")}  ${String(c.tool ?? "")}  ${String(c.outcome ?? "")}` +
      (c.error_type ? `  ${c.error_type}: ${String(c.error_message ?? "")}` : "") + `  (linked by ${String(c.rule ?? "?")})`,
      false)));
  }

  async function loadReports() {
    const out = $("reports");
    try {
      const d = await api("POST", "/review/api/qa", { op: "list", limit: 50 });
      const items = Array.isArray(d.items) ? d.items : [];
      out.replaceChildren(...(items.length ? items.map((f) => {
        const body = el("div", { class: "report-body" });
        const item = el("details", { class: "report" },
          elShown("summary", {}, `#${f.id} ${String(f.type ?? "")} [${String(f.status ?? "")}] ${String(f.title ?? "")}`, false), body);
        item.addEventListener("toggle", async () => {
          if (!item.open || body.childNodes.length) return;
          try {
            const r = await api("POST", "/review/api/qa", { op: "show", id: Number(f.id) });
            const fb = r.feedback || {};
            body.replaceChildren(elShown("p", { class: "meta" }, `from ${String(fb.user_sub ?? "?")}` +
              (fb.session_id ? `, session ${fb.session_id}` : "") + `, ${String(fb.created_at ?? "")}`, false),
            elShown("p", { class: "description" }, String(fb.description ?? ""), true),
            el("h4", { text: `Calls before it (${Array.isArray(r.calls) ? r.calls.length : 0})` }),
            reportCalls(Array.isArray(r.calls) ? r.calls : []));
          } catch (e) {
            body.replaceChildren(el("p", { class: "error", text: `Cannot load the report: ${e.message}` }));
          }
        });
        return item;
      }) : [el("p", { text: "No QA reports." })]));
    } catch (e) {
      out.replaceChildren(el("p", { class: "error", text: `Cannot load the reports: ${e.message}` }));
    }
  }

  // ---- subjects, with their bytes when the agent sent them ----
  function subjectsBlock(subs) {
    if (!Array.isArray(subs) || !subs.length) return null;
    return el("div", { class: "block" }, el("h4", { text: "Subjects" }), el("ul", { class: "subjects" },
      ...subs.map((s) => el("li", {},
        elShown("span", { class: "name" }, s.name ?? "(unnamed)", false), " ",
        elShown("span", { class: "mono" }, `sha256:${s.digest?.sha256 ?? s.sha256 ?? "?"}`, false), " ",
        el("span", { class: s.computed ? "computed" : "asserted",
          text: s.computed ? "computed by the gateway" : "asserted by the agent" }),
        typeof s.content_base64 === "string" ? bytesBlock(s.content_base64) : null))));
  }

  function bytesBlock(b64) {
    let bytes;
    try { bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)); } catch (e) {
      return el("p", { class: "error", text: "(its bytes could not be decoded)" });
    }
    let text = null;
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch (e) { /* binary */ }
    // Control characters and bidirectional overrides could hide what is approved: hex then.
    if (text !== null && /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(text)) text = null;
    const pre = el("pre", { class: "bytes" });
    let label;
    if (text !== null) {
      label = `${bytes.length} bytes of text`;
      // The text being approved: zero-width, LRM/RLM and other invisible characters marked too.
      pre.append(...shown(text.length > TEXT_MAX ? text.slice(0, TEXT_MAX) + `\n…[${text.length - TEXT_MAX} more characters not shown]` : text, true));
    } else {
      label = `${bytes.length} bytes, binary` + (bytes.length > HEX_MAX ? `, the first ${HEX_MAX} shown` : "");
      const lines = [];
      for (let i = 0; i < Math.min(bytes.length, HEX_MAX); i += 16) {
        const row = bytes.subarray(i, Math.min(i + 16, bytes.length, HEX_MAX));
        lines.push(i.toString(16).padStart(8, "0") + "  " + Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ").padEnd(48) +
          "  " + Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join(""));
      }
      pre.append(lines.join("\n"));
    }
    return el("details", { class: "bytes" }, el("summary", { text: label }), pre);
  }

  // ---- decisions ----
  function decideForm(r) {
    const id = `r${++uid}`, type = String(r.type);
    const form = el("form", { class: "decide" });
    const actions = el("div", { class: "actions" });
    if (type === "input") {
      form.append(el("label", { for: `${id}-a`, text: "Your answer" }),
        el("input", { id: `${id}-a`, name: "answer", type: "text", value: r.default ?? "", autocomplete: "off" }));
      // An input box cannot mark what it holds: a default with hidden characters is shown marked beside it.
      if (HIDDEN.test(String(r.default ?? "")))
        form.append(el("p", { class: "trunc" }, "The default holds hidden characters: ", ...shown(r.default, false)));
      actions.append(el("button", { type: "submit", "data-action": "answer", class: "primary", text: "Answer" }));
    } else if (type === "selection") {
      const opts = Array.isArray(r.options) ? r.options : [];
      form.append(el("fieldset", {}, el("legend", { text: "Options" }), ...opts.map((o, i) =>
        el("label", { class: "option" }, el("input", { type: "radio", name: "option", value: i + 1 }), ` ${i + 1}. `, ...shown(o, false)))));
      actions.append(el("button", { type: "submit", "data-action": "select", class: "primary", text: "Select" }));
    } else {
      const pk = r.assurance === "passkey";
      actions.append(el("button", { type: "submit", "data-action": "approve", class: "primary", text: pk ? "Approve with passkey" : "Approve" }));
      if (pk) form.append(el("p", { class: "hint", text: "The policy asks for your passkey: it signs this request, this outcome and your comment." }));
    }
    // No live button the signer would refuse after a click: the rule's reason instead.
    if (r.may_not_decide) {
      actions.replaceChildren();
      form.replaceChildren(el("p", { class: "may-not", role: "note" }, ...shown(String(r.may_not_decide), false),
        r.may_reject === false ? "" : " You may still reject it."));
    }
    if (r.may_reject !== false)
      actions.append(el("button", { type: "submit", "data-action": "reject", class: "reject", text: "Reject" }));
    if (!actions.childElementCount) return form;
    const approving = type !== "input" && type !== "selection";
    form.append(el("label", { for: `${id}-c`, text: approving ? "Comment (optional to approve; a reason is required to reject)" : "Reason (required to reject)" }),
      el("textarea", { id: `${id}-c`, name: "comment", rows: "2" }), actions);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const b = ev.submitter;
      if (b && OUTCOME[b.dataset.action]) decide(r, form, b.dataset.action);
    });
    return form;
  }

  // ---- passkeys (WebAuthn) ----
  // The gateway's options come as base64url text; the browser's buffers go back the same way.
  const fromB64u = (s) => Uint8Array.from(atob(String(s).replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const toB64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const withIds = (list) => (Array.isArray(list) ? list : []).map((c) => ({ ...c, id: fromB64u(c.id) }));

  async function addPasskey() {
    if (!window.PublicKeyCredential) return status("This browser has no passkeys (WebAuthn).", true);
    try {
      const o = (await api("POST", "/review/api/passkey", { op: "register-options" })).publicKey;
      const pk = { ...o, challenge: fromB64u(o.challenge), user: { ...o.user, id: fromB64u(o.user.id) }, excludeCredentials: withIds(o.excludeCredentials) };
      const cred = await navigator.credentials.create({ publicKey: pk });
      const a = await api("POST", "/review/api/passkey", { op: "register", passkey: {
        credential_id: toB64u(cred.rawId), authenticator_data: toB64u(cred.response.getAuthenticatorData()),
        client_data_json: toB64u(cred.response.clientDataJSON) } });
      status(`Passkey added for ${a.reviewer} (ledger seq ${a.seq}; credential ${a.credential_id}: give it to your auditor to pin).`);
      loadPasskeys();
    } catch (e) {
      if (e.status === 401) return signedOut("Your session ended: log in again.", true);
      status(`Passkey not added: ${e.message}`, true);
    }
  }
  $("passkey-add").addEventListener("click", () => addPasskey());

  // The reviewer's own passkeys, each removable (a lost or replaced authenticator): the
  // removal is a ledger entry, after which that passkey approves nothing.
  async function loadPasskeys() {
    let d;
    try {
      d = await api("POST", "/review/api/passkey", { op: "list" });
    } catch (e) {
      return; // the page works without the list
    }
    const list = Array.isArray(d.passkeys) ? d.passkeys : [];
    $("passkey-list").replaceChildren(...list.map((p) => el("li", { "data-id": String(p.credential_id) },
      el("code", { text: String(p.credential_id) }), ` (${String(p.rp_id)}, used ${Number(p.sign_count)} times) `,
      el("button", { type: "button", class: "passkey-remove", "data-id": String(p.credential_id), text: "Remove" }))));
    if (!list.length) $("passkey-list").append(el("li", { text: "None yet: Add a passkey above." }));
  }
  $("passkey-list").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button.passkey-remove");
    if (!b) return;
    b.disabled = true;
    try {
      const a = await api("POST", "/review/api/passkey", { op: "remove", passkey: { credential_id: b.dataset.id } });
      status(`Passkey removed (ledger seq ${a.seq}): it approves nothing from now on.`);
    } catch (e) {
      if (e.status === 401) return signedOut("Your session ended: log in again.", true);
      status(`Passkey not removed: ${e.message}`, true);
    }
    loadPasskeys();
  });

  // An approval a rule gives only with a passkey: the gateway's challenge commits to this
  // request, this outcome, this reviewer and the text as typed; the authenticator signs it.
  async function passkeyAssertion(body) {
    if (!window.PublicKeyCredential) throw new Error("this request needs a passkey, and this browser has none");
    const o = (await api("POST", "/review/api/passkey", { op: "approve-options", session_id: body.session_id, outcome: body.outcome, text: body.text })).publicKey;
    const a = await navigator.credentials.get({ publicKey: { ...o, challenge: fromB64u(o.challenge), allowCredentials: withIds(o.allowCredentials) } });
    return { credential_id: toB64u(a.rawId), authenticator_data: toB64u(a.response.authenticatorData),
      client_data_json: toB64u(a.response.clientDataJSON), signature: toB64u(a.response.signature) };
  }

  async function decide(r, form, action) {
    const body = { session_id: r.session_id, outcome: OUTCOME[action] };
    const comment = form.elements.comment.value.trim();
    if (action === "reject") {
      if (!comment) {
        status("A reason is required to reject.", true);
        return form.elements.comment.focus();
      }
      body.text = comment;
    } else if (action === "approve" && comment) {
      body.text = comment;
    } else if (action === "answer") {
      body.text = form.elements.answer.value;
    } else if (action === "select") {
      const c = form.querySelector('input[name="option"]:checked');
      if (!c) return status("Pick an option first.", true);
      body.option = Number(c.value);
    }
    const buttons = form.querySelectorAll("button"), focused = document.activeElement, card = S.cards.get(r.session_id);
    if (card && form.contains(focused)) card.refocus = true; // disabled buttons drop focus: find it a home after
    buttons.forEach((b) => (b.disabled = true));
    try {
      if (r.assurance === "passkey" && action !== "reject") body.passkey = await passkeyAssertion(body);
      const a = await api("POST", "/review/api/decide", body);
      if (a.pending) status(`approved by ${S.reviewer}, ${a.approvals} of ${a.quorum}: it waits for another reviewer.`);
      else status(`${a.outcome || body.outcome}: "${short(r.message)}" (ledger seq ${a.seq}).`);
    } catch (e) {
      if (e.status === 401) return signedOut("Your session ended: log in again.", true);
      status(`Not recorded: ${e.message}`, true);
    } finally {
      buttons.forEach((b) => (b.disabled = false));
      if (card) card.refocus = false;
      if (form.isConnected && document.activeElement === document.body && focused) focused.focus();
    }
    refresh();
  }

  const short = (s) => { s = String(s ?? ""); return s.length > 80 ? s.slice(0, 79) + "…" : s; };

  checkSession();
})();
