// Checks of the test upstream (tests/mcp/upstream_fs.mjs) and the reference proxy
// (tests/bench/ref_proxy.mjs) themselves, so that the gate's tests and bench stand on servers
// known to do what they say: each tool through the official SDK client over stdio and HTTP, the
// call log, the credential (required, never returned), each UPSTREAM_MODE as its comment
// describes (seen on the wire by a raw JSON-RPC driver), and the proxy forwarding an allowed
// call once and answering a denied one with its reason and nothing upstream. Prints TAP.
// Usage: node tests/mcp/upstream_smoke.mjs   (run by tests/integration/upstream_servers.sh)
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const FS = join(here, "upstream_fs.mjs");
const FIXTURE = join(here, "upstream_fixture.mjs");
const PROXY = join(here, "..", "bench", "ref_proxy.mjs");
const NODE = process.execPath;
const SECRET = "s3cr3t-" + Math.random().toString(36).slice(2);
const top = mkdtempSync(join(tmpdir(), "assent-upsmoke-"));
let n = 0, failed = 0;
const ok = (cond, desc, why = "") => {
  n++;
  if (!cond) failed++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}${!cond && why ? ` (${String(why).slice(0, 300)})` : ""}`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("");
const lines = (f) => (existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : []);
let dirs = 0;
function fresh() { // a served root with two files and a subdirectory, and its own call log
  const d = join(top, `r${dirs++}`);
  mkdirSync(join(d, "root", "sub"), { recursive: true });
  writeFileSync(join(d, "root", "a.txt"), "alpha\n");
  writeFileSync(join(d, "root", "b.txt"), `the credential is ${SECRET}\n`);
  return { root: join(d, "root"), log: join(d, "calls.log"), dir: d };
}
function links(r) { // two ways out of the root: a link to a system file (read), one to a file of ours (write)
  symlinkSync("/etc/passwd", join(r.root, "link"));
  writeFileSync(join(r.dir, "outside.txt"), "untouched");
  symlinkSync(join(r.dir, "outside.txt"), join(r.root, "outlink"));
}
const envFor = (r, extra = {}) => ({ ...process.env, UPSTREAM_SECRET: SECRET, UPSTREAM_CALL_LOG: r.log, ...extra });

// ---- a raw JSON-RPC driver over a child's stdio: sees every line, JSON or not ----
class Raw {
  constructor(args, env) {
    this.p = spawn(NODE, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    this.buf = Buffer.alloc(0);
    this.lines = []; // every line received, parsed when it parses (else {raw: length, text})
    this.waiters = [];
    this.exit = new Promise((r) => this.p.on("exit", (code, sig) => r({ code, sig })));
    this.p.stderr.on("data", () => {});
    this.p.stdout.on("data", (c) => {
      this.buf = Buffer.concat([this.buf, c]);
      let i;
      while ((i = this.buf.indexOf(10)) >= 0) {
        const s = this.buf.subarray(0, i).toString("utf8");
        this.buf = this.buf.subarray(i + 1);
        let m;
        try { m = JSON.parse(s); } catch { m = { raw: s.length, text: s.slice(0, 80) }; }
        this.lines.push(m);
        this.waiters = this.waiters.filter((w) => !w(m));
      }
    });
    this.id = 0;
  }
  send(m) { this.p.stdin.write(JSON.stringify(m) + "\n"); }
  request(method, params, ms = 20000) {
    const id = ++this.id;
    this.send({ jsonrpc: "2.0", id, method, params });
    return this.answer(id, ms);
  }
  answer(id, ms) {
    const seen = this.lines.find((m) => m.id === id);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(null), ms);
      this.waiters.push((m) => (m.id === id ? (clearTimeout(t), resolve(m), true) : false));
    });
  }
  async init() {
    const a = await this.request("initialize", { protocolVersion: "2025-11-25", capabilities: {},
      clientInfo: { name: "upstream-smoke", version: "1" } });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return a;
  }
  kill() { if (this.p.exitCode === null) this.p.kill("SIGKILL"); }
}

async function sdkStdio(cmd, args, env) {
  const c = new Client({ name: "upstream-smoke", version: "1" });
  await c.connect(new StdioClientTransport({ command: cmd, args, env, stderr: "ignore" }));
  return c;
}
function startHttp(args, env) { // -> {p, port}
  const p = spawn(NODE, args, { env, stdio: ["ignore", "pipe", "ignore"] });
  return new Promise((resolve, reject) => {
    let out = "";
    const t = setTimeout(() => reject(new Error(`no PORT line from ${args.join(" ")}`)), 20000);
    p.stdout.on("data", (c) => {
      out += c;
      const m = out.match(/^PORT (\d+)$/m);
      if (m) { clearTimeout(t); resolve({ p, port: Number(m[1]) }); }
    });
    p.on("exit", (code) => reject(new Error(`exited ${code} before PORT`)));
  });
}
async function sdkHttp(port) {
  const c = new Client({ name: "upstream-smoke", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return c;
}

// ---- each tool, through the SDK client ----
async function tools(c, r, how) {
  const { tools: list } = await c.listTools();
  const byName = Object.fromEntries(list.map((t) => [t.name, t]));
  ok(["read_file", "list_directory", "write_file", "delete_files", "echo"].every((t) => byName[t]),
    `${how}: tools/list has the five tools`, list.map((t) => t.name).join(","));
  ok(byName.read_file?.annotations?.readOnlyHint === true && byName.list_directory?.annotations?.readOnlyHint === true
    && byName.echo?.annotations?.readOnlyHint === true, `${how}: read_file, list_directory and echo are declared readOnly`);
  ok(byName.delete_files?.annotations?.destructiveHint === true && byName.write_file?.annotations?.readOnlyHint === false,
    `${how}: delete_files is declared destructive, write_file not readOnly`);
  const before = lines(r.log).length;
  let a = await c.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  ok(textOf(a) === "alpha\n" && !a.isError, `${how}: read_file returns the file`, JSON.stringify(a));
  a = await c.callTool({ name: "list_directory", arguments: { path: "." } });
  ok(textOf(a) === "[DIR] sub\n[FILE] a.txt\n[FILE] b.txt\n[FILE] link\n[FILE] outlink", `${how}: list_directory lists the root`,
    textOf(a));
  a = await c.callTool({ name: "write_file", arguments: { path: "sub/new.txt", content: "fresh" } });
  ok(!a.isError && readFileSync(join(r.root, "sub", "new.txt"), "utf8") === "fresh", `${how}: write_file writes`, textOf(a));
  a = await c.callTool({ name: "delete_files", arguments: { paths: ["sub/new.txt", "a.txt"] } });
  ok(!a.isError && !existsSync(join(r.root, "a.txt")) && !existsSync(join(r.root, "sub", "new.txt")),
    `${how}: delete_files deletes both files`, textOf(a));
  a = await c.callTool({ name: "echo", arguments: { text: "hello" } });
  ok(textOf(a) === "hello", `${how}: echo echoes`, textOf(a));
  a = await c.callTool({ name: "read_file", arguments: { path: "../calls.log" } });
  ok(a.isError && /outside/.test(textOf(a)), `${how}: a path out of the root is refused`, textOf(a));
  a = await c.callTool({ name: "read_file", arguments: { path: "link" } });
  ok(a.isError && /outside/.test(textOf(a)), `${how}: a symbolic link out of the root is refused`, textOf(a));
  a = await c.callTool({ name: "write_file", arguments: { path: "outlink", content: "overwritten" } });
  ok(a.isError && /outside/.test(textOf(a)) && readFileSync(join(r.dir, "outside.txt"), "utf8") === "untouched",
    `${how}: a write through a symbolic link out of the root is refused`, textOf(a));
  a = await c.callTool({ name: "read_file", arguments: { path: "b.txt" } });
  ok(!textOf(a).includes(SECRET) && textOf(a).includes("[redacted]"), `${how}: the credential is scrubbed from results`, textOf(a));
  a = await c.callTool({ name: "echo", arguments: { text: `say ${SECRET}` } });
  ok(!JSON.stringify(a).includes(SECRET), `${how}: ... even when an argument carries it`);
  const got = lines(r.log).slice(before);
  const want = ["read_file {\"path\":\"a.txt\"}", "list_directory {\"path\":\".\"}",
    "write_file {\"path\":\"sub/new.txt\",\"content\":\"fresh\"}", "delete_files {\"paths\":[\"sub/new.txt\",\"a.txt\"]}",
    "echo {\"text\":\"hello\"}", "read_file {\"path\":\"../calls.log\"}", "read_file {\"path\":\"link\"}",
    "write_file {\"path\":\"outlink\",\"content\":\"overwritten\"}", "read_file {\"path\":\"b.txt\"}",
    `echo {"text":"say ${SECRET}"}`];
  ok(JSON.stringify(got) === JSON.stringify(want), `${how}: the call log has one line per call, TOOL JSON-args, in order`,
    JSON.stringify(got));
}

async function main() {
  // stdio
  let r = fresh();
  links(r);
  let c = await sdkStdio(NODE, [FS, "--root", r.root], envFor(r));
  await tools(c, r, "stdio");
  await c.close();
  // HTTP
  r = fresh();
  links(r);
  let h = await startHttp([FS, "--http", "--root", r.root], envFor(r));
  c = await sdkHttp(h.port);
  await tools(c, r, "http");
  await c.close();
  h.p.kill();

  // the credential: required
  r = fresh();
  c = await sdkStdio(NODE, [FS, "--root", r.root], { ...process.env, UPSTREAM_CALL_LOG: r.log, UPSTREAM_SECRET: "" });
  let a = await c.callTool({ name: "echo", arguments: { text: "x" } });
  ok(a.isError && /UPSTREAM_SECRET/.test(textOf(a)), "without UPSTREAM_SECRET every call fails", textOf(a));
  ok(lines(r.log).length === 1, "... and is still counted");
  await c.close();

  // crash-on-call: counted, then exit 3
  r = fresh();
  let w = new Raw([FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "crash-on-call" }));
  ok((await w.init())?.result?.serverInfo, "crash-on-call: initialize answered");
  ok((await w.request("tools/list"))?.result?.tools?.length === 5, "crash-on-call: tools/list answered");
  w.send({ jsonrpc: "2.0", id: 99, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } });
  const ex = await w.exit;
  ok(ex.code === 3, "crash-on-call: the server exits with status 3 on tools/call", JSON.stringify(ex));
  ok(!w.lines.some((m) => m.id === 99), "crash-on-call: the call got no answer");
  ok(lines(r.log).length === 1, "crash-on-call: the call was counted before the crash");

  // hang: tools/call never answered, the rest is
  r = fresh();
  w = new Raw([FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "hang" }));
  await w.init();
  const hung = w.request("tools/call", { name: "echo", arguments: { text: "x" } }, 2000);
  const ping = await w.request("ping");
  ok(ping?.result !== undefined, "hang: ping sent after the call is answered");
  ok((await hung) === null, "hang: the tools/call is never answered (2 s after a later ping was)");
  ok(lines(r.log).length === 1, "hang: the call was counted");
  w.kill();

  // garbage: non-JSON lines and a 10 MB line after initialize
  r = fresh();
  w = new Raw([FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "garbage" }));
  await w.init();
  const pong = await w.request("ping");
  const junk = w.lines.filter((m) => m.raw !== undefined);
  ok(junk.length >= 2, "garbage: non-JSON lines on stdout after initialize", JSON.stringify(junk.map((j) => j.text)));
  ok(junk.some((j) => j.raw >= 10 << 20), "garbage: one of them is 10 MB long", JSON.stringify(junk.map((j) => j.raw)));
  ok(pong?.result !== undefined, "garbage: still answers after it");
  w.kill();

  // flood: thousands of notifications while it serves
  r = fresh();
  w = new Raw([FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "flood" }));
  await w.init();
  for (let i = 0; i < 400 && w.lines.filter((m) => m.method === "notifications/message").length < 3000; i++) await sleep(25);
  const flood = w.lines.filter((m) => m.method === "notifications/message").length;
  ok(flood >= 3000, `flood: it sent ${flood} notifications/message (wanted 3,000 within 10 s)`);
  const e = await w.request("tools/call", { name: "echo", arguments: { text: "through" } });
  ok(e?.result?.content?.[0]?.text === "through", "flood: a call is still answered in the flood");
  w.kill();

  // slow-start: initialize after at least 3 s
  r = fresh();
  const t0 = Date.now();
  w = new Raw([FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "slow-start" }));
  const init = await w.init();
  const took = Date.now() - t0;
  ok(init?.result && took >= 3000, `slow-start: initialize answered after ${took} ms (at least 3,000)`);
  w.kill();

  // the modes over Streamable HTTP, on the wire
  {
    const post = async (port, msg, sid, ms = 20000) => {
      const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
      if (sid) Object.assign(headers, { "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25" });
      const r = await fetch(`http://127.0.0.1:${port}/mcp`, { method: "POST", headers, body: JSON.stringify(msg),
        signal: AbortSignal.timeout(ms) });
      return { status: r.status, sid: r.headers.get("mcp-session-id"), body: await r.text() };
    };
    const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {},
      clientInfo: { name: "upstream-smoke", version: "1" } } };
    const call = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } };
    const open = async (mode) => {
      const rr = fresh();
      const hh = await startHttp([FS, "--http", "--root", rr.root], envFor(rr, { UPSTREAM_MODE: mode }));
      const t0 = Date.now();
      const i = await post(hh.port, INIT);
      await post(hh.port, { jsonrpc: "2.0", method: "notifications/initialized" }, i.sid);
      return { ...hh, r: rr, sid: i.sid, took: Date.now() - t0, init: i };
    };
    let m = await open("crash-on-call");
    const exited = new Promise((res) => m.p.on("exit", (code) => res(code)));
    await post(m.port, call, m.sid).catch(() => null);
    ok((await exited) === 3 && lines(m.r.log).length === 1, "http crash-on-call: counted, then exit status 3");
    m = await open("garbage");
    let g = await post(m.port, call, m.sid);
    let parsed = true;
    try { JSON.parse(g.body); } catch { parsed = false; }
    ok(g.status === 200 && !parsed && g.body.length >= 1 << 20 && lines(m.r.log).length === 1,
      "http garbage: tools/call answered 200 with a non-JSON body of 1 MB, and counted", `${g.status} ${g.body.length}`);
    m.p.kill();
    m = await open("hang");
    const hungCall = post(m.port, call, m.sid, 2000).then(() => "answered", () => "no answer");
    const png = await post(m.port, { jsonrpc: "2.0", id: 3, method: "ping" }, m.sid);
    ok(png.status === 200 && (await hungCall) === "no answer" && lines(m.r.log).length === 1,
      "http hang: tools/call never answered (2 s), a later ping is");
    m.p.kill();
    m = await open("slow-start");
    ok(m.init.status === 200 && m.took >= 3000, `http slow-start: initialize answered after ${m.took} ms (at least 3,000)`);
    m.p.kill();
  }

  // resources and prompts
  r = fresh();
  c = await sdkStdio(NODE, [FS, "--root", r.root], envFor(r, { UPSTREAM_MODE: "resources,prompts" }));
  const res = await c.listResources();
  ok(res.resources.map((x) => x.uri).sort().join(",") === "file:///README,test://status", "resources: two resources listed",
    JSON.stringify(res));
  const tpl = await c.listResourceTemplates();
  ok(tpl.resourceTemplates.some((t) => t.uriTemplate === "fs://{path}"), "resources: the template fs://{path} listed");
  let rd = await c.readResource({ uri: "fs://a.txt" });
  ok(rd.contents?.[0]?.text === "alpha\n", "resources: a file read through the template", JSON.stringify(rd));
  rd = await c.readResource({ uri: "file:///README" });
  ok(/test upstream/.test(rd.contents?.[0]?.text), "resources: file:///README read");
  const pr = await c.listPrompts();
  ok(pr.prompts.some((p) => p.name === "summarize_file" && p.arguments?.[0]?.name === "path"), "prompts: summarize_file {path}");
  const g = await c.getPrompt({ name: "summarize_file", arguments: { path: "a.txt" } });
  ok(g.messages?.[0]?.content?.text === "Summarize the file a.txt.", "prompts: the prompt fills its argument");
  await c.close();
  w = new Raw([FS, "--root", r.root], envFor(r));
  const caps = (await w.init())?.result?.capabilities ?? {};
  ok(!caps.resources && !caps.prompts, "without those modes it offers no resources or prompts", JSON.stringify(caps));
  w.kill();

  // ---- the conformance fixture over stdio (as a gate runs it): the 2025 forms of the
  // multi-round-trip fixtures ask the client during the call ----
  {
    const fc = new Client({ name: "upstream-smoke", version: "1" },
      { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
    const asked = [];
    fc.setRequestHandler(ElicitRequestSchema, async (rq) => {
      asked.push(rq.params.message);
      const prop = Object.keys(rq.params.requestedSchema.properties)[0];
      return { action: "accept", content: { [prop]: prop === "ok" ? true : `${prop}-value` } };
    });
    fc.setRequestHandler(CreateMessageRequestSchema, async (rq) => {
      asked.push(rq.params.messages[0].content.text);
      return { role: "assistant", content: { type: "text", text: "Paris" }, model: "smoke" };
    });
    fc.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///smoke", name: "smoke" }] }));
    const flog = join(top, "fixture-calls.log");
    await fc.connect(new StdioClientTransport({ command: NODE, args: [FIXTURE],
      env: { ...process.env, UPSTREAM_CALL_LOG: flog }, stderr: "ignore" }));
    const names = (await fc.listTools()).tools.map((t) => t.name);
    ok(["test_simple_text", "test_tool_with_progress", "test_sampling", "json_schema_2020_12_tool", "test_reconnection",
      "test_input_required_result_multi_round"].every((t) => names.includes(t)), "fixture stdio: the fixture tools listed",
    names.join(","));
    a = await fc.callTool({ name: "test_simple_text", arguments: {} });
    ok(textOf(a) === "This is a simple text response for testing.", "fixture stdio: test_simple_text", textOf(a));
    a = await fc.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
    ok(textOf(a) === "Done: name-value likes color-value"
      && asked.join("|") === "Step 1: What is your name?|Step 2: What is your favorite color?",
    "fixture stdio: multi_round asks its two questions in turn, then answers", `${textOf(a)} / ${asked.join("|")}`);
    a = await fc.callTool({ name: "test_input_required_result_multiple_inputs", arguments: {} });
    ok(textOf(a) === "All inputs received: name=name-value, greeting=Paris, roots=1",
      "fixture stdio: multiple_inputs asks by elicitation, sampling and roots/list", textOf(a));
    const gp = await fc.getPrompt({ name: "test_input_required_result_prompt", arguments: {} });
    ok(gp.messages?.[0]?.content?.text === "Use this context: context-value", "fixture stdio: the prompt elicits first",
      JSON.stringify(gp));
    ok(lines(flog).length === 3 && lines(flog)[0] === "test_simple_text {}", "fixture stdio: its call log (tools/call only)",
      JSON.stringify(lines(flog)));
    await fc.close();
  }

  // progress, on the wire (the SDK client drops a progress notification that arrives in the same
  // read as the result: its handler is gone by the time the notification is dispatched)
  {
    const fw = new Raw([FIXTURE], { ...process.env });
    await fw.init();
    const ans = await fw.request("tools/call", { name: "test_tool_with_progress", arguments: {}, _meta: { progressToken: "p1" } });
    const at = fw.lines.indexOf(ans);
    const prog = fw.lines.slice(0, at).filter((m) => m.method === "notifications/progress" && m.params?.progressToken === "p1");
    ok(prog.map((m) => `${m.params.progress}/${m.params.total}`).join(",") === "0/100,50/100,100/100" && ans?.result,
      "fixture stdio: test_tool_with_progress sends 0, 50, 100 of 100 on the call's token before its result",
      JSON.stringify(prog.map((m) => m.params)));
    fw.kill();
  }

  // ---- the reference proxy ----
  for (const how of ["stdio", "http"]) {
    r = fresh();
    const pol = join(r.dir, "rules.json"), plog = join(r.dir, "proxy.jsonl");
    writeFileSync(pol, JSON.stringify({ rules: [
      { upstream: "fs", tool: "delete_*", action: "deny", reason: "no deletes here" },
      { upstream: "fs", tool: "*", action: "allow" }], default: "deny" }));
    const args = [PROXY, "--policy", pol, "--log", plog, "--", NODE, FS, "--root", r.root];
    if (how === "http") {
      args.splice(5, 0, "--http");
      h = await startHttp(args, envFor(r));
      c = await sdkHttp(h.port);
    } else {
      c = await sdkStdio(NODE, args, envFor(r));
    }
    const { tools: list } = await c.listTools();
    ok(list.map((t) => t.name).sort().join(",") === "fs__delete_files,fs__echo,fs__list_directory,fs__read_file,fs__write_file",
      `proxy ${how}: the upstream's tools listed as fs__TOOL`, list.map((t) => t.name).join(","));
    ok(list.find((t) => t.name === "fs__delete_files")?.annotations?.destructiveHint === true,
      `proxy ${how}: with the upstream's annotations`);
    a = await c.callTool({ name: "fs__echo", arguments: { text: "via proxy" } });
    ok(textOf(a) === "via proxy" && !a.isError, `proxy ${how}: an allowed call is forwarded, the upstream's result returned`,
      JSON.stringify(a));
    ok(JSON.stringify(lines(r.log)) === JSON.stringify(["echo {\"text\":\"via proxy\"}"]),
      `proxy ${how}: it reached the upstream once`, JSON.stringify(lines(r.log)));
    a = await c.callTool({ name: "fs__delete_files", arguments: { paths: ["a.txt"] } });
    ok(a.isError && /no deletes here/.test(textOf(a)), `proxy ${how}: a denied call answers isError with the rule's reason`,
      textOf(a));
    ok(lines(r.log).length === 1 && existsSync(join(r.root, "a.txt")), `proxy ${how}: ... and nothing reached the upstream`,
      JSON.stringify(lines(r.log)));
    const pl = lines(plog).map((l) => JSON.parse(l));
    ok(pl.length === 2 && pl[0].tool === "echo" && pl[0].decision === "allow" && pl[1].tool === "delete_files"
      && pl[1].decision === "deny" && pl[1].rule === 1, `proxy ${how}: one log line per call, with its decision and rule`,
      JSON.stringify(pl));
    a = await c.callTool({ name: "fs__read_file", arguments: { path: "b.txt" } });
    ok(!JSON.stringify(a).includes(SECRET), `proxy ${how}: the upstream's credential does not come through`);
    await c.close();
    if (how === "http") h.p.kill();
  }
}

try {
  await main();
} catch (e) {
  ok(false, "the checks ran to the end", e?.stack ?? e);
}
rmSync(top, { recursive: true, force: true });
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
