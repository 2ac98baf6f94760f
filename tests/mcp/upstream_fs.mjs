// A filesystem-like MCP server written with the official SDK (@modelcontextprotocol/sdk 1.32.2,
// McpServer), the test upstream that assent's gate stands in front of (issue 15). Its tools work
// on the files under one root directory, and it counts every tools/call that reaches it, so a
// test can prove what was forwarded and how often.
//
// Usage: node tests/mcp/upstream_fs.mjs [--root DIR] [--http]
//   --root DIR (else env UPSTREAM_ROOT, else the current directory): every path is inside it;
//              a path that leaves it (.., a symbolic link out) is refused.
//   --http     Streamable HTTP on 127.0.0.1, a free port, printed as `PORT n` on stdout
//              (env UPSTREAM_PORT chooses the port); without it, stdio.
// Tools:
//   read_file {path}                 the file's text          readOnly
//   list_directory {path}            "[DIR] a" / "[FILE] b"   readOnly
//   write_file {path, content}       creates or replaces      destructive (it may overwrite), idempotent
//   delete_files {paths: [..]}       removes files            destructive, idempotent
//   echo {text}                      the text back            readOnly (the bench's cheapest call)
//   (every tool: openWorld false, it touches only its root)
// Environment:
//   UPSTREAM_SECRET   its credential: unset or empty, every tools/call answers isError. Its value
//                     never appears in a result (it is scrubbed from whatever a tool returns, file
//                     contents included), so a test that finds it anywhere assent wrote has found
//                     assent leaking the environment it gave this server.
//   UPSTREAM_CALL_LOG a file: one line `TOOL JSON-args` is appended per tools/call as it arrives
//                     on the wire (before validation, before the secret check, before any mode
//                     below acts), so it shows exactly what reached the upstream.
//   UPSTREAM_MODE     comma-separated, for robustness and passthrough tests:
//     crash-on-call   exit(3) as soon as a tools/call arrives (after counting it): an upstream
//                     that dies mid-call; the gate must fail that call and restart the server
//     hang            never answer tools/call (ping, lists still answered): the gate must time the
//                     call out and stay usable
//     garbage         after initialize: writes non-JSON lines and one 10 MB line on stdout (over
//                     HTTP: answers each tools/call POST with a non-JSON body): the upstream
//                     parser must bound and survive it
//     flood           after initialize: sends thousands of notifications/message per second for as
//                     long as it runs: the gate must bound what it buffers and keep serving others
//     slow-start      sleeps 3 s before answering initialize: start-up must not block other upstreams
//     resources       also serves two text resources (file:///README, test://status) and a template
//                     (fs://{path}, a file under the root): resources/* passthrough
//     prompts         also serves one prompt, summarize_file {path}: prompts/* passthrough
//     roots           after initialize: asks its client roots/list (a start-up request no call
//                     carries) and appends `roots/list RESULT-or-ERROR-JSON` to UPSTREAM_CALL_LOG
import { appendFileSync, readFileSync, readdirSync, realpathSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import * as z from "zod";
import { serveHttp } from "./mcp_http.mjs";

const argv = process.argv.slice(2);
const arg = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const useHttp = argv.includes("--http");
const root = realpathSync(resolve(arg("--root") ?? process.env.UPSTREAM_ROOT ?? process.cwd()));
const secret = process.env.UPSTREAM_SECRET ?? "";
const callLog = process.env.UPSTREAM_CALL_LOG;
const modes = new Set((process.env.UPSTREAM_MODE ?? "").split(",").map((s) => s.trim()).filter(Boolean));
const KNOWN = ["crash-on-call", "hang", "garbage", "flood", "slow-start", "resources", "prompts", "roots"];
for (const m of modes) {
  if (!KNOWN.includes(m)) {
    process.stderr.write(`upstream_fs: unknown UPSTREAM_MODE ${m} (known: ${KNOWN.join(", ")})\n`);
    process.exit(2);
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- paths: inside the root, or refused ----
function inRoot(p) {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith(".." + sep) && rel !== ".." && !isAbsolute(rel));
}
function resolvePath(p, mustExist = true) {
  if (typeof p !== "string" || p.length === 0) throw new Error("path must be a non-empty string");
  const abs = resolve(root, p.replace(/^\/+/, ""));
  if (!inRoot(abs)) throw new Error(`${p}: outside the served directory`);
  // a symbolic link may point out: check the real path (of the parent, for a file still to create;
  // an existing one, link or not, is checked where it leads, since writing follows links)
  let real;
  try {
    real = realpathSync(abs);
  } catch (e) {
    if (mustExist || e.code !== "ENOENT") throw e;
    real = join(realpathSync(dirname(abs)), abs.slice(dirname(abs).length + 1));
  }
  if (!inRoot(real)) throw new Error(`${p}: outside the served directory`);
  return real;
}

// ---- results: never the secret ----
const scrub = (s) => (secret ? String(s).split(secret).join("[redacted]") : String(s));
const text = (s) => ({ content: [{ type: "text", text: scrub(s) }] });
const fail = (s) => ({ content: [{ type: "text", text: scrub(s) }], isError: true });
function guarded(fn) {
  return async (args, extra) => {
    if (!secret) return fail("UPSTREAM_SECRET is not set: this server has no credential and refuses every call");
    try {
      return await fn(args, extra);
    } catch (e) {
      return fail(e?.message ?? String(e));
    }
  };
}

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

function newServer() {
  const caps = { tools: {}, logging: {} };
  const server = new McpServer({ name: "assent-test-upstream-fs", version: "1.0.0" }, { capabilities: caps });
  server.registerTool("read_file", {
    title: "Read a file",
    description: "Read a text file under the served directory and return its contents.",
    inputSchema: { path: z.string().describe("path relative to the served directory") },
    annotations: readOnly,
  }, guarded(({ path }) => text(readFileSync(resolvePath(path), "utf8"))));
  server.registerTool("list_directory", {
    title: "List a directory",
    description: "List the entries of a directory under the served directory, one per line, [DIR] or [FILE] first.",
    inputSchema: { path: z.string().describe("path relative to the served directory (\".\" for the top)") },
    annotations: readOnly,
  }, guarded(({ path }) => {
    const entries = readdirSync(resolvePath(path), { withFileTypes: true })
      .map((d) => `${d.isDirectory() ? "[DIR]" : "[FILE]"} ${d.name}`).sort();
    return text(entries.join("\n"));
  }));
  server.registerTool("write_file", {
    title: "Write a file",
    description: "Create a file under the served directory, or replace its contents if it exists.",
    inputSchema: { path: z.string(), content: z.string() },
    // It may replace what is there: destructive. Writing the same content twice leaves the same
    // file: idempotent.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, guarded(({ path, content }) => {
    const p = resolvePath(path, false);
    writeFileSync(p, content);
    return text(`wrote ${Buffer.byteLength(content)} bytes to ${relative(root, p)}`);
  }));
  server.registerTool("delete_files", {
    title: "Delete files",
    description: "Delete one or more files under the served directory.",
    inputSchema: { paths: z.array(z.string()).min(1).max(1000) },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, guarded(({ paths }) => {
    const real = paths.map((p) => resolvePath(p)); // all checked before any is removed
    for (const p of real) unlinkSync(p);
    return text(`deleted ${real.length} file(s): ${real.map((p) => relative(root, p)).join(", ")}`);
  }));
  server.registerTool("echo", {
    title: "Echo",
    description: "Return the text given.",
    inputSchema: { text: z.string() },
    annotations: readOnly,
  }, guarded(({ text: t }) => text(t)));

  if (modes.has("resources")) {
    server.registerResource("readme", "file:///README", { title: "README", mimeType: "text/plain",
      description: "What this server is" }, async (uri) => ({
      contents: [{ uri: uri.href, mimeType: "text/plain", text: "assent test upstream: a filesystem-like MCP server" }] }));
    server.registerResource("status", "test://status", { title: "Status", mimeType: "application/json" },
      async (uri) => ({ contents: [{ uri: uri.href, mimeType: "application/json",
        text: JSON.stringify({ root: "served", calls: callCount }) }] }));
    server.registerResource("file", new ResourceTemplate("fs://{path}", { list: undefined }),
      { title: "A file under the served directory", mimeType: "text/plain" },
      async (uri, { path }) => ({ contents: [{ uri: uri.href, mimeType: "text/plain",
        text: scrub(readFileSync(resolvePath(decodeURIComponent(path)), "utf8")) }] }));
  }
  if (modes.has("prompts")) {
    server.registerPrompt("summarize_file", {
      title: "Summarize a file",
      description: "Ask the model to summarize one file of the served directory",
      argsSchema: { path: z.string().describe("the file") },
    }, ({ path }) => ({ messages: [{ role: "user", content: { type: "text", text: `Summarize the file ${path}.` } }] }));
  }

  server.server.oninitialized = () => afterInitialize(server);
  return server;
}

// ---- counting and the misbehaviour modes that act on the wire ----
let callCount = 0;
function count(msg) {
  if (msg?.method !== "tools/call") return;
  callCount++;
  if (callLog) appendFileSync(callLog, `${msg.params?.name} ${JSON.stringify(msg.params?.arguments ?? {})}\n`);
}
// transport.onmessage wrapped: what arrives is counted before the SDK sees it; hang drops calls
function hook(transport) {
  const inner = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    count(msg);
    if (msg?.method === "tools/call") {
      if (modes.has("crash-on-call")) process.exit(3);
      if (modes.has("hang")) return;
    }
    inner?.call(transport, msg, extra);
  };
}

function afterInitialize(server) {
  if (modes.has("roots"))
    server.server.listRoots().then((r) => r, (e) => ({ error: { code: e.code, message: e.message } }))
      .then((r) => { if (callLog) appendFileSync(callLog, `roots/list ${JSON.stringify(r)}\n`); });
  if (modes.has("garbage") && !useHttp) {
    process.stdout.write("this is not JSON\n{\"jsonrpc\": \"2.0\", broken\n\u0000\u0001 binary \u00ff\n");
    process.stdout.write("x".repeat(10 << 20) + "\n");
    process.stdout.write("[1,2,3]\n");
  }
  if (modes.has("flood")) {
    let n = 0;
    const burst = () => {
      for (let i = 0; i < 50; i++)
        server.server.notification({ method: "notifications/message",
          params: { level: "info", logger: "flood", data: `flood message ${n++}` } }).catch(() => {});
      setTimeout(burst, 5); // about 10,000 a second, for as long as it runs
    };
    burst();
  }
}

if (useHttp) {
  await serveHttp(newServer, {
    port: Number(process.env.UPSTREAM_PORT ?? 0),
    onTransport: hook,
    beforeRequest: async (body, req, res) => {
      const msgs = Array.isArray(body) ? body : [body];
      if (modes.has("slow-start") && msgs.some((m) => m?.method === "initialize")) await sleep(3000);
      if (modes.has("garbage") && msgs.some((m) => m?.method === "tools/call")) {
        msgs.forEach(count);
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end("this is not JSON {{{\n" + "y".repeat(1 << 20));
        return true;
      }
      return false;
    },
  });
} else {
  if (modes.has("slow-start")) await sleep(3000); // initialize waits in the pipe meanwhile
  const server = newServer();
  const transport = new StdioServerTransport();
  await server.connect(transport);
  hook(transport);
}
