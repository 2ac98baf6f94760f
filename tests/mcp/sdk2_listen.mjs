// subscriptions/listen through assentd's gate (MCP 2026-07-28), for tests/integration/gate_listen.sh:
// an upstream (upstream_listen.mjs, prefix "lu") whose `grow` tool adds a tool to its list.
//   - the official SDK 2.4 client pinned to 2026-07-28, over HTTP (an agent key) and stdio (the
//     assentd --stdio bridge): ClientOptions.listChanged opens a listen stream at connect (the
//     acknowledgement grants toolsListChanged), and a call of `grow` makes onChanged fire with the
//     new list; client.listen() is granted only what the gate can tell, and hears `grow_prompt`'s
//     new prompt as prompts/list_changed;
//   - raw HTTP: the acknowledgement is the stream's first event, with the request's id in
//     _meta.subscriptionId, then tools/list_changed with the same id; nothing granted ends the
//     stream with its result; a malformed or missing filter is 400 / -32602 naming the member;
//     Accept without text/event-stream is 406; the ninth stream of one agent is refused, another
//     agent's is not, and a closed stream frees its place;
//   - raw stdio: the acknowledgement and the change as lines, and notifications/cancelled ends it.
//   - a listen request inside a 2025 HTTP session ends with its stream, freeing its place.
// Usage: node sdk2_listen.mjs BUILD STATE URL KEY OTHER_KEY THIRD_KEY. Prints TAP.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { spawn } from "node:child_process";

const [build, state, url, key, otherKey, thirdKey] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc, why = "") => {
  n++;
  if (!cond) failed++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}${!cond && why ? ` (${String(why).slice(0, 400)})` : ""}`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const short = (e) => `${e?.code ?? ""} ${String(e?.message ?? e).replace(/\s+/g, " ").slice(0, 300)}`;
const V = "2026-07-28";
const META = { "io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "sdk2-listen-raw", version: "1" } };
const SUB = "io.modelcontextprotocol/subscriptionId";
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// a promise and its resolver, with a bound: a wait that never ends fails the check, not the test run
function waiter(ms = 20000) {
  let done;
  const p = new Promise((r) => { done = r; setTimeout(() => r(undefined), ms); });
  return { p, done };
}

function transportFor(kind) {
  if (kind === "stdio")
    return new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", state],
      env: { ...process.env }, stderr: "inherit" });
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
}

// The SDK client: listChanged opens a listen stream at connect; grow changes the list.
async function sdkFlow(kind) {
  const changed = waiter();
  const client = new Client({ name: `sdk2-listen-${kind}`, version: "2.4.0" }, {
    versionNegotiation: { mode: { pin: V } },
    listChanged: { tools: { onChanged: (err, tools) => changed.done({ err, tools }) } },
  });
  try {
    await client.connect(transportFor(kind));
    const caps = client.getServerCapabilities();
    ok(caps?.tools?.listChanged === true, `SDK ${kind}: server/discover through the gate advertises tools.listChanged`,
      JSON.stringify(caps));
    const auto = client.autoOpenedSubscription;
    ok(same(auto?.honoredFilter, { toolsListChanged: true }),
      `SDK ${kind}: listChanged opened a subscriptions/listen stream at connect, acknowledged with toolsListChanged`,
      JSON.stringify(auto?.honoredFilter));
    const grown = (await client.callTool({ name: "lu__grow", arguments: {} })).content?.[0]?.text;
    const got = await changed.p;
    const names = (got?.tools ?? []).map((t) => t.name);
    ok(!got?.err && typeof grown === "string" && names.includes(`lu__${grown}`),
      `SDK ${kind}: a call that changes the upstream's tools makes onChanged fire with the new list (lu__${grown})`,
      got ? `${got.err ?? ""} tools: ${names.join(",")}` : "onChanged never fired");
    ok(caps?.prompts?.listChanged === true, `SDK ${kind}: ... and prompts.listChanged (the upstream serves prompts)`,
      JSON.stringify(caps));
    const prompted = waiter();
    client.setNotificationHandler("notifications/prompts/list_changed", () => prompted.done(true));
    const sub = await client.listen({ promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ["x://y"] });
    ok(same(sub.honoredFilter, { promptsListChanged: true }),
      `SDK ${kind}: client.listen() is granted only what the gate can tell (no resources, no resource subscriptions)`,
      JSON.stringify(sub.honoredFilter));
    const added = (await client.callTool({ name: "lu__grow_prompt", arguments: {} })).content?.[0]?.text;
    const heard = await prompted.p;
    const pnames = (await client.listPrompts()).prompts.map((p) => p.name);
    ok(heard === true && pnames.includes(`lu__${added}`),
      `SDK ${kind}: the upstream's new prompt is heard as prompts/list_changed on that stream (lu__${added})`,
      `heard: ${heard}; prompts: ${pnames.join(",")}`);
    await sub.close();
    let refused = "";
    try {
      await client.listen({ toolsListChanged: 7 });
    } catch (e) {
      refused = short(e);
    }
    ok(/toolsListChanged must be a boolean/.test(refused),
      `SDK ${kind}: a malformed filter is refused, naming the member`, refused || "accepted");
  } catch (e) {
    ok(false, `SDK ${kind}: the flow ran`, short(e));
  } finally {
    await client.close().catch(() => {});
  }
}

// ---- raw HTTP ----
const headers = (k, method, accept = "application/json, text/event-stream") => ({
  "Content-Type": "application/json", Accept: accept, "MCP-Protocol-Version": V, "Mcp-Method": method,
  ...(k ? { Authorization: `Bearer ${k}` } : {}),
});
async function post(k, method, params, id = 1, accept, name) {
  const h = headers(k, method, accept);
  if (name) h["Mcp-Name"] = name;
  const r = await fetch(url, { method: "POST", headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { _meta: META, ...params } }) });
  const text = await r.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: r.status, type: r.headers.get("content-type") ?? "", body };
}
const grow = (k = key) => post(k, "tools/call", { name: "lu__grow", arguments: {} }, 9, undefined, "lu__grow");

// A listen stream read event by event: next() is its next JSON message (undefined at its end).
async function openStream(k, id, filter, extra = {}) {
  const ac = new AbortController();
  const r = await fetch(url, { method: "POST", headers: { ...headers(k, "subscriptions/listen"), ...extra }, signal: ac.signal,
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { _meta: META, notifications: filter } }) });
  const type = r.headers.get("content-type") ?? "";
  if (!type.startsWith("text/event-stream")) {
    const text = await r.text();
    return { status: r.status, type, text, close: () => {} };
  }
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = "";
  const next = async (ms = 20000) => {
    const timer = setTimeout(() => ac.abort(), ms);
    try {
      for (;;) {
        const i = buf.indexOf("\n\n");
        if (i >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = ev.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
          if (data) return JSON.parse(data);
          continue; // a comment (keep-alive)
        }
        const { value, done } = await reader.read();
        if (done) return undefined;
        buf += dec.decode(value, { stream: true });
      }
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  return { status: r.status, type, next, close: () => ac.abort() };
}

async function rawHttp() {
  const s = await openStream(key, 42, { toolsListChanged: true, resourcesListChanged: false });
  const ack = s.next ? await s.next() : undefined;
  ok(s.status === 200 && ack?.method === "notifications/subscriptions/acknowledged" &&
     same(ack.params?.notifications, { toolsListChanged: true }) && ack.params?._meta?.[SUB] === 42,
     "HTTP: the listen stream's first event is the acknowledgement, granting toolsListChanged, with the request's id",
     `${s.status} ${s.type} ${JSON.stringify(ack ?? s.text)}`);
  const g = await grow();
  const note = s.next ? await s.next() : undefined;
  ok(g.status === 200 && note?.method === "notifications/tools/list_changed" && note.params?._meta?.[SUB] === 42,
    "HTTP: then the upstream's tool list change arrives as tools/list_changed stamped with that id",
    JSON.stringify(note));
  s.close();

  const none = await openStream(key, "p1", { resourcesListChanged: true });
  const a1 = none.next ? await none.next() : undefined, end = a1 ? await none.next() : undefined;
  const after = end ? await none.next() : "not read";
  ok(same(a1?.params?.notifications, {}) && end?.id === "p1" && end?.result?.resultType === "complete" &&
     end.result._meta?.[SUB] === "p1" && after === undefined,
     "HTTP: a filter the gate can grant nothing of is acknowledged empty, then ended by its result (and the stream closes)",
     `${JSON.stringify(a1)} ${JSON.stringify(end)} ${JSON.stringify(after)}`);

  const bad = await post(key, "subscriptions/listen", { notifications: { toolsListChanged: "yes" } }, 5);
  ok(bad.status === 400 && bad.body?.error?.code === -32602 && bad.body.id === 5 &&
     /params\.notifications\.toolsListChanged must be a boolean, not a string/.test(bad.body.error.message),
     "HTTP: a filter member of the wrong type is 400, -32602, naming it", JSON.stringify(bad));
  const missing = await post(key, "subscriptions/listen", {}, 6);
  ok(missing.status === 400 && missing.body?.error?.code === -32602 &&
     /params\.notifications is required/.test(missing.body.error.message),
     "HTTP: a listen request without params.notifications is 400, -32602, saying it is required", JSON.stringify(missing));
  const uris = Array.from({ length: 65 }, (_, i) => `x://${i}`);
  const many = await post(key, "subscriptions/listen", { notifications: { resourceSubscriptions: uris } }, 7);
  ok(many.status === 400 && /names 65 URIs; at most 64/.test(many.body?.error?.message ?? ""),
    "HTTP: more than 64 resourceSubscriptions is 400, -32602, with the bound", JSON.stringify(many).slice(0, 300));
  const json = await post(key, "subscriptions/listen", { notifications: { toolsListChanged: true } }, 8, "application/json");
  ok(json.status === 406 && /Accept must admit text\/event-stream/.test(JSON.stringify(json.body)),
    "HTTP: a listen request whose Accept does not admit text/event-stream is 406, saying so", JSON.stringify(json));

  // the bound: 8 streams of one agent (the other key: the SDK flows' streams were this one's)
  const mine = [];
  for (let i = 0; i < 8; i++) {
    const st = await openStream(otherKey, `m${i}`, { toolsListChanged: true });
    const a = st.next ? await st.next() : undefined;
    mine.push({ st, a });
  }
  ok(mine.every((m) => m.a?.method === "notifications/subscriptions/acknowledged"),
    "HTTP: one agent opens 8 listen streams", mine.map((m) => m.a?.method ?? m.st.text).join(" "));
  const ninth = await openStream(otherKey, "m8", { toolsListChanged: true });
  ok(ninth.status === 500 && /Subscription limit reached: this agent already holds 8 subscriptions\/listen streams/.test(ninth.text ?? ""),
    "HTTP: its ninth is refused with -32603 \"Subscription limit reached\", saying which limit",
    `${ninth.status} ${ninth.text}`);
  const other = await openStream(key, "o1", { toolsListChanged: true });
  const oa = other.next ? await other.next() : undefined;
  ok(oa?.method === "notifications/subscriptions/acknowledged", "HTTP: another agent still opens one",
    `${other.status} ${other.text ?? JSON.stringify(oa)}`);
  other.close();
  // every open stream hears the change
  await grow(otherKey);
  const heard = await Promise.all(mine.map((m) => m.st.next()));
  ok(heard.every((h, i) => h?.method === "notifications/tools/list_changed" && h.params?._meta?.[SUB] === `m${i}`),
    "HTTP: each of the 8 streams hears the change, each stamped with its own id", JSON.stringify(heard).slice(0, 300));
  mine[0].st.close();
  let again;
  for (let i = 0; i < 100; i++) { // the worker sees the hang-up within a second or so
    again = await openStream(otherKey, `m9-${i}`, { toolsListChanged: true });
    if (again.next) break;
    await sleep(100);
  }
  const aa = again?.next ? await again.next() : undefined;
  ok(aa?.method === "notifications/subscriptions/acknowledged", "HTTP: a closed stream frees its place for another",
    again?.text);
  again?.close();
  for (const m of mine.slice(1)) m.st.close();
}

// Inside a 2025 session (a 2026-07-28 request may come on one): a stream that ends frees its place
// although the session goes on, so ten in a row, each closed, are all acknowledged.
async function sessionListen() {
  const init = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", Authorization: `Bearer ${thirdKey}` },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25",
    capabilities: {}, clientInfo: { name: "sdk2-listen-session", version: "1" } } }) });
  await init.text();
  const sid = init.headers.get("mcp-session-id");
  const extra = { "Mcp-Session-Id": sid ?? "", "MCP-Protocol-Version": "2025-11-25" };
  let acked = 0, last = "";
  for (let i = 0; i < 10; i++) {
    for (let t = 0; t < 50; t++) { // the worker sees a hang-up within a second or so
      const st = await openStream(thirdKey, `sess${i}`, { toolsListChanged: true }, extra);
      const a = st.next ? await st.next() : undefined;
      st.close();
      last = a ? JSON.stringify(a) : `${st.status} ${st.text}`;
      if (a?.method === "notifications/subscriptions/acknowledged") { acked++; break; }
      if (!/Subscription limit reached/.test(last)) break;
      await sleep(100);
    }
  }
  ok(sid && acked === 10, "HTTP session: ten listen streams in a row on one 2025 session, each closed, are all acknowledged",
    `session ${sid}; acknowledged ${acked}; last: ${last}`);
}

// ---- raw stdio, through the bridge ----
async function rawStdio() {
  const p = spawn(`${build}/assentd`, ["--stdio", "--state", state], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = [], waiters = [];
  let buf = "";
  p.stdout.on("data", (c) => {
    buf += c;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      lines.push(m);
      for (const w of waiters.splice(0)) if (!w(m)) waiters.push(w);
    }
  });
  const until = (pred) => {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    const w = waiter();
    waiters.push((m) => (pred(m) ? (w.done(m), true) : false));
    return w.p;
  };
  const send = (m) => p.stdin.write(JSON.stringify(m) + "\n");
  const req = (id, method, params) => send({ jsonrpc: "2.0", id, method, params: { _meta: META, ...params } });
  try {
    req("s1", "subscriptions/listen", { notifications: { toolsListChanged: true } });
    const ack = await until((m) => m.method === "notifications/subscriptions/acknowledged");
    ok(ack?.params?._meta?.[SUB] === "s1" && same(ack.params.notifications, { toolsListChanged: true }),
      "stdio: the acknowledgement comes as a line stamped with the listen request's id", JSON.stringify(ack));
    req(2, "tools/call", { name: "lu__grow", arguments: {} });
    const note = await until((m) => m.method === "notifications/tools/list_changed");
    ok(note?.params?._meta?.[SUB] === "s1", "stdio: the upstream's change arrives as tools/list_changed stamped s1",
      JSON.stringify(note));
    send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "s1" } });
    req("s2", "subscriptions/listen", { notifications: { toolsListChanged: true } });
    await until((m) => m.params?._meta?.[SUB] === "s2");
    const before = lines.length;
    req(3, "tools/call", { name: "lu__grow", arguments: {} });
    const note2 = await until((m, i) => m.method === "notifications/tools/list_changed" && m.params?._meta?.[SUB] === "s2");
    const s1After = lines.slice(before).filter((m) => m.params?._meta?.[SUB] === "s1");
    ok(note2 && s1After.length === 0,
      "stdio: after notifications/cancelled names s1, the next change reaches s2 and not s1",
      `s2: ${JSON.stringify(note2)}; s1 lines after the cancel: ${s1After.length}`);
    req("s2", "subscriptions/listen", { notifications: { toolsListChanged: true } });
    const dup = await until((m) => m.id === "s2" && m.error);
    ok(dup?.error?.code === -32600 && /already open on this connection/.test(dup.error.message),
      "stdio: a second listen with an open subscription's id is refused, saying so", JSON.stringify(dup));
  } catch (e) {
    ok(false, "stdio: the raw flow ran", short(e));
  } finally {
    p.stdin.end();
    p.kill();
  }
}

await sdkFlow("http");
await sdkFlow("stdio");
await rawHttp();
await sessionListen();
await rawStdio();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
