// Pending approvals as MCP tasks (2025-11-25), through the official SDK 1.x client's
// task API (client.experimental.tasks) against `assentd --stdio`: a request_feedback
// call made a task, polled with tasks/get, its result collected with tasks/result, the
// caller's tasks listed, one cancelled (ledgered), another agent's id unknown. The long
// case: a reviewer who approves after DELAY seconds (90 by default) while the client is
// left at its default 60 s request timeout. Prints TAP.
// Usage: node sdk_tasks.mjs STATE_DIR BUILD_DIR [DELAY_SECONDS]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { execFileSync } from "node:child_process";

const [state, build, delayArg] = process.argv.slice(2);
const delay = Number(delayArg ?? 90);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect(name, env = {}) {
  const transport = new StdioClientTransport({
    command: `${build}/assentd`,
    args: ["--stdio", "--state", state],
    env: { ...process.env, ASSENT_SINGLE_USER: "1", ...env },
    stderr: "inherit",
  });
  return { client: new Client({ name, version: "1.0.0" }, { capabilities: { tasks: {} } }), transport };
}

const { client, transport } = connect("sdk-tasks");
await client.connect(transport);
const caps = client.getServerCapabilities();
ok(caps?.tasks?.requests?.tools?.call && caps.tasks.list && caps.tasks.cancel,
  "initialize: the server says tools/call may be a task, and tasks can be listed and cancelled");
const tools = await client.listTools();
ok(tools.tools.find((t) => t.name === "request_feedback")?.execution?.taskSupport === "optional",
  "request_feedback says a task is optional for it");

// Run a task to its end; returns {created, statuses, result, error}.
async function runTask(args, onCreated) {
  const out = { statuses: [] };
  const stream = client.experimental.tasks.callToolStream({ name: "request_feedback", arguments: args },
    CallToolResultSchema, { task: { ttl: 3600000 } });
  for await (const m of stream) {
    if (m.type === "taskCreated") { out.created = m.task; onCreated?.(m.task); }
    else if (m.type === "taskStatus") out.statuses.push(m.task.status);
    else if (m.type === "result") out.result = m.result;
    else if (m.type === "error") out.error = m.error;
  }
  return out;
}

// 1. the long one: approved after `delay` seconds, the client at its default timeout
const started = Date.now();
let approvedAt = 0;
const long = await runTask({ type: "approval", message: "Apply plan after a long think?" }, (task) => {
  setTimeout(() => { assent("approve", task.taskId, "-m", "took my time"); approvedAt = Date.now(); }, delay * 1000);
});
ok(long.created?.taskId?.startsWith("req-") && long.created.status === "working",
  `the call became a task at once, working (${long.created?.taskId})`);
ok(long.created?.pollInterval > 0 && long.created?.ttl >= 3600000, "the task says how often to poll and how long it lives");
ok(long.statuses.includes("working"), "tasks/get said working while the reviewer thought");
const sc = long.result?.structuredContent;
ok(sc?.approved === true && sc.response === "took my time" && typeof sc.approval_token === "string",
  `after ${Math.round((Date.now() - started) / 1000)} s the result is the approval, with its token (${long.error?.message ?? "no error"})`);
ok(approvedAt > 0 && approvedAt - started >= delay * 1000, `the reviewer decided ${delay} s after the call`);
if (sc?.approval_token) {
  let verified = false;
  try { execFileSync(`${build}/assent-verify`, ["token", sc.approval_token, "--aud", "assent", "--jwks", `${state}/keys/jwks.json`, "--ledger", `${state}/ledger`]); verified = true; } catch { /* not ok below */ }
  ok(verified, "assent-verify token --ledger accepts the task's token");
}

// 2. tasks/get, tasks/list, tasks/result on a task that is done
const tid = long.created?.taskId;
const got = await client.experimental.tasks.getTask(tid);
ok(got.status === "completed" && got.taskId === tid, `tasks/get on the done task: completed (${got.status})`);
const listed = await client.experimental.tasks.listTasks();
ok(listed.tasks.some((t) => t.taskId === tid && t.status === "completed"), "tasks/list has the caller's task");
const again = await client.experimental.tasks.getTaskResult(tid, CallToolResultSchema);
ok(again.structuredContent?.approved === true, "tasks/result gives the same result again");

// 3. a rejection is a completed task whose result says approved: false
const rej = await runTask({ type: "approval", message: "Drop the table?" }, (task) =>
  setTimeout(() => assent("reject", task.taskId, "-m", "no"), 300));
ok(rej.result?.structuredContent?.approved === false && rej.result.structuredContent.status === "rejected",
  "a rejected task's result says rejected");

// 4. cancel: ledgered, then status cancelled
const stream = client.experimental.tasks.callToolStream({ name: "request_feedback",
  arguments: { type: "approval", message: "Cancel me" } }, CallToolResultSchema, { task: { ttl: 60000 } });
const first = (await stream.next()).value;
const cid = first?.task?.taskId;
const cancelled = await client.experimental.tasks.cancelTask(cid);
ok(cancelled.status === "cancelled", `tasks/cancel answers the task cancelled (${cancelled.status})`);
ok(!JSON.parse(assent("pending", "--json")).some((r) => r.session_id === cid), "the cancelled task is no longer pending");
const exported = execFileSync(`${build}/assent-verify`, ["export", `${state}/ledger`], { encoding: "utf8" });
ok(exported.split("\n").some((l) => l.includes('"kind":"cancelled"') && l.includes(cid)), "the cancel is in the ledger");
let err2 = "";
try { await client.experimental.tasks.cancelTask(cid); } catch (e) { err2 = String(e.message); }
ok(/terminal/.test(err2), `cancelling it again is refused: it is terminal (${err2})`);
await stream.return?.();

// 5. another agent (another uid would be the real thing; here another stdio client of the
//    same uid shares the owner, so use an unknown id to show the refusal's shape)
let err3 = "";
try { await client.experimental.tasks.getTask("req-00000000000000000000000000000000"); } catch (e) { err3 = `${e.code} ${e.message}`; }
ok(/-32602/.test(err3), `tasks/get on an id that is not the caller's: invalid params (${err3})`);

await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
