// The official MCP TypeScript SDK client against `assentd --stdio`: each flow a
// user would go through, decided by a reviewer through the real `assent` CLI.
// Prints TAP. Usage: node sdk_flows.mjs STATE_DIR BUILD_DIR
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const [state, build] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pendingId(message) {
  for (let i = 0; i < 100; i++) {
    const list = JSON.parse(assent("pending", "--json"));
    const hit = list.find((r) => r.message === message);
    if (hit) return hit.session_id;
    await sleep(50);
  }
  throw new Error(`request "${message}" never showed up in assent pending`);
}

function connect(name) {
  const transport = new StdioClientTransport({
    command: `${build}/assentd`,
    args: ["--stdio", "--state", state],
    env: { ...process.env, ASSENT_SINGLE_USER: "1" },
    stderr: "inherit",
  });
  const client = new Client({ name, version: "1.0.0" });
  return { client, transport };
}

const { client, transport } = connect("sdk-flows");
await client.connect(transport);
ok(client.getServerVersion()?.name === "assent", "initialize: the server says it is assent");

const tools = await client.listTools();
const names = tools.tools.map((t) => t.name).sort();
ok(JSON.stringify(names) === JSON.stringify(["get_feedback", "list_pending_feedback", "qa_link_feedback", "qa_record_event", "qa_submit_feedback",
  "request_feedback", "submit_feedback"]), `tools/list names the four tools and the three QA tools (${names})`);
ok(tools.tools.every((t) => t.inputSchema?.type === "object" && t.outputSchema?.type === "object"),
  "every tool has an input and an output schema");

const call = (args, opts = {}) =>
  client.callTool({ name: "request_feedback", arguments: args }, undefined, { timeout: 60000, ...opts });

// approve, with a subject given as bytes: the token is bound to them
writeFileSync(`${state}/plan.tfplan`, "terraform plan bytes\n");
const content = Buffer.from("terraform plan bytes\n").toString("base64");
let p = call({ type: "approval", message: "Apply plan to prod?", audience: "tf-prod",
  subject: { name: "plan.tfplan", content }, context: { workspace: "prod", password: "hunter2" } });
let sid = await pendingId("Apply plan to prod?");
const shown = JSON.parse(assent("show", sid, "--json"));
ok(shown.context?.password === "[secret: 7 chars]" && shown.context?.workspace === "prod",
  "the reviewer sees the context with the password masked, and how long it is");
const sub = shown.subject?.[0];
ok(sub?.computed === true && sub.size === 21 &&
  Buffer.from(sub.content_base64 ?? "", "base64").toString() === "terraform plan bytes\n",
  "the reviewer gets the subject's bytes, hashed by the gateway");
const text = assent("show", sid);
ok(/computed by the gateway/.test(text) && /21 bytes of text/.test(text) && /^terraform plan bytes$/m.test(text),
  "assent show prints the subject's bytes as text");
assent("approve", sid, "-m", "go ahead");
let res = await p;
let sc = res.structuredContent;
ok(sc?.approved === true && sc.status === "approved" && sc.session_id === sid, "approve: approved true, with its session_id");
ok(typeof sc?.approval_token === "string" && sc.approval_token.split(".").length === 3, "approve: an approval token");
writeFileSync(`${state}/approve.token`, sc.approval_token);

// reject
p = call({ type: "approval", message: "Drop table users?" });
sid = await pendingId("Drop table users?");
assent("reject", sid, "-m", "not today");
sc = (await p).structuredContent;
ok(sc?.approved === false && sc.status === "rejected" && sc.response === "not today" && !sc.approval_token,
  "reject: approved false, the reason, no token");

// input, and the default on an empty answer
p = call({ type: "input", message: "Which branch?", default: "main" });
sid = await pendingId("Which branch?");
assent("answer", sid, "release-1.2");
sc = (await p).structuredContent;
ok(sc?.status === "answered" && sc.response === "release-1.2", "input: the answer comes back");
p = call({ type: "input", message: "Which region?", default: "eu-west-1" });
sid = await pendingId("Which region?");
assent("answer", sid, "");
sc = (await p).structuredContent;
ok(sc?.response === "eu-west-1", "input: an empty answer takes the default");

// selection
p = call({ type: "selection", message: "Pick a plan", options: ["small", "medium", "large"] });
sid = await pendingId("Pick a plan");
assent("select", sid, "2");
sc = (await p).structuredContent;
ok(sc?.status === "selected" && sc.response === "medium" && sc.selection === 2, "selection: the chosen option's text");

// timeout
sc = (await call({ type: "approval", message: "Nobody answers this", timeout_override: 1 })).structuredContent;
ok(sc?.status === "timeout" && sc.error === "timeout" && sc.approved === false, "timeout: error timeout, approved false");

// non-blocking: returns at once, collected later with get_feedback
sc = (await call({ type: "approval", message: "Later, please", wait: false })).structuredContent;
ok(sc?.status === "pending" && typeof sc.session_id === "string", "wait=false returns at once with a session_id");
const later = sc.session_id;
const mine = (await client.callTool({ name: "list_pending_feedback", arguments: {} })).structuredContent;
ok(mine?.requests?.some((r) => r.session_id === later), "list_pending_feedback shows my pending request");
assent("approve", later);
sc = (await client.callTool({ name: "get_feedback", arguments: { session_id: later, wait_seconds: 5 } })).structuredContent;
ok(sc?.approved === true && sc.session_id === later && sc.approval_token, "get_feedback collects the approval and its token");

// cancel: the SDK sends notifications/cancelled when the call is aborted
const ac = new AbortController();
p = call({ type: "approval", message: "Cancel me" }, { signal: ac.signal });
sid = await pendingId("Cancel me");
ac.abort();
await p.catch(() => {});
let gone = false;
for (let i = 0; i < 50 && !gone; i++) {
  gone = !JSON.parse(assent("pending", "--json")).some((r) => r.session_id === sid);
  if (!gone) await sleep(50);
}
ok(gone, "cancel: an aborted call leaves the queue");

// progress: a client that passes a progress token hears from the gateway while a person thinks
const seen = [];
p = call({ type: "approval", message: "Slow reviewer" },
  { onprogress: (pr) => seen.push(pr), resetTimeoutOnProgress: true });
sid = await pendingId("Slow reviewer");
await sleep(11500);
assent("approve", sid);
sc = (await p).structuredContent;
ok(seen.length >= 1 && seen[0].progress > 0 && sc?.approved === true,
  `progress notifications while waiting (${seen.length} seen), then the answer`);

// submit_feedback is refused for agents
res = await client.callTool({ name: "submit_feedback", arguments: { session_id: later, approved: true } });
ok(res.isError === true && /reviewer/.test(res.content?.[0]?.text ?? ""), "submit_feedback is refused for an agent");

// invalid arguments come back as isError results that say what was wrong
res = await client.callTool({ name: "request_feedback", arguments: { type: "selection", message: "no options" } });
ok(res.isError === true && /options/.test(res.content?.[0]?.text ?? ""), "a selection without options: isError naming options");

// a call whose line is over 4 MiB is answered with its id (the SDK writes "id" last), so the
// client hears of it at once instead of waiting for its timeout
{
  const t0 = Date.now();
  let err = null;
  try {
    await client.callTool({ name: "request_feedback", arguments: { type: "approval", message: "x".repeat(5 << 20) } },
      undefined, { timeout: 50000 });
  } catch (e) { err = e; }
  ok(err?.code === -32600 && /over the limit/.test(String(err?.message)),
    `a 5 MiB call: the SDK client gets -32600 for its own request (got ${err?.code}: ${String(err?.message).slice(0, 120)}, after ${Date.now() - t0} ms)`);
  res = await client.callTool({ name: "list_pending_feedback", arguments: {} });
  ok(res.isError !== true, "... and the same connection goes on");
}

await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
