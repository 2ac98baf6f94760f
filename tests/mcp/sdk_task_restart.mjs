// A task across a restart of the daemon, through the official SDK 1.x client over an
// `assentd --stdio` bridge (gateway_restart.sh): `create` makes a request_feedback task
// and prints its taskId; `get TASKID`, on a new connection after the restart, prints the
// task's status and, once it is done, the result's structured content. One JSON line.
// Usage: node sdk_task_restart.mjs STATE BUILD POLICY create|get [TASKID]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [state, build, policy, mode, tid] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: `${build}/assentd`,
  args: ["--stdio", "--state", state, ...(policy ? ["--policy", policy] : [])],
  env: { ...process.env, ASSENT_SINGLE_USER: "1" },
  stderr: "inherit",
});
const client = new Client({ name: "sdk-task-restart", version: "1.0.0" }, { capabilities: { tasks: {} } });
await client.connect(transport);
let out;
if (mode === "create") {
  const stream = client.experimental.tasks.callToolStream({ name: "request_feedback",
    arguments: { type: "approval", message: "a task across the restart" } }, CallToolResultSchema, { task: { ttl: 3600000 } });
  const first = (await stream.next()).value;
  out = { taskId: first?.task?.taskId, status: first?.task?.status };
  await stream.return?.();
} else {
  const t = await client.experimental.tasks.getTask(tid);
  out = { status: t.status };
  if (t.status === "completed")
    out.result = (await client.experimental.tasks.getTaskResult(tid, CallToolResultSchema)).structuredContent;
}
console.log(JSON.stringify(out));
await client.close();
