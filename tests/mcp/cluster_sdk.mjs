// The official SDK 2.x client (@modelcontextprotocol/client 2.4) against assent replicas behind
// nginx (tests/integration/cluster_nginx.sh): the agent reaches whichever replica nginx picks, a
// reviewer decides on another replica with the real `assent` CLI, and the agent hears.
// Usage: node cluster_sdk.mjs PHASE URL KEY BUILD REVIEWER_STATE OUTDIR
//   ask:     for the 2025 era (initialize, Mcp-Session-Id) and 2026-07-28 (pinned, stateless):
//            a blocking approval decided on REVIEWER_STATE (token to OUTDIR/token.ERA), a poll
//            request (wait false) decided there and collected with get_feedback, and a poll
//            request left pending, its id in OUTDIR/left.ERA, for the collect phase
//   collect: after the agent's replica died, each left request (decided meanwhile on
//            REVIEWER_STATE) collected through nginx, from whichever replica answers now
// One TAP line per check, no plan (the shell counts).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const [phase, url, key, build, reviewer, out] = process.argv.slice(2);
const ok = (cond, desc) => console.log(`${cond ? "ok" : "not ok"} - ${desc}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", reviewer, ...args], { encoding: "utf8" });
const ERAS = [
  { name: "2025", negotiation: { mode: "legacy" } },
  { name: "2026-07-28", negotiation: { mode: { pin: "2026-07-28" } } },
];

async function connect(era) {
  const client = new Client({ name: `cluster-sdk-${era.name}`, version: "2.4.0" }, { versionNegotiation: era.negotiation });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }), { timeout: 30000 });
  return client;
}

const tool = async (client, name, args) =>
  (await client.callTool({ name, arguments: args }, { timeout: 60000 })).structuredContent;

// The reviewer's replica lists it once it imported the request (NOTIFY).
async function pendingOnReviewer(message) {
  for (let i = 0; i < 200; i++) {
    const hit = JSON.parse(assent("pending", "--json")).find((r) => r.message === message);
    if (hit) return hit.session_id;
    await sleep(50);
  }
  throw new Error(`"${message}" never showed up on the reviewer's replica`);
}

async function collect(client, sid) {
  for (let i = 0; i < 100; i++) {
    const sc = await tool(client, "get_feedback", { session_id: sid, wait_seconds: 0 });
    if (sc?.status !== "pending") return sc;
    await sleep(50);
  }
  return { status: "still pending" };
}

async function ask(era) {
  const client = await connect(era);
  try {
    const msg = `cluster sdk ${era.name}: deploy?`;
    const p = tool(client, "request_feedback", { type: "approval", message: msg });
    assent("approve", await pendingOnReviewer(msg), "-m", "go");
    const sc = await p;
    const good = sc?.status === "approved" && typeof sc.approval_token === "string";
    if (good) writeFileSync(`${out}/token.${era.name}`, sc.approval_token);
    ok(good, `${era.name}: a blocking approval decided on another replica comes back approved, with a token (${JSON.stringify(sc)?.slice(0, 120)})`);
    const pmsg = `cluster sdk ${era.name}: poll`;
    const sid = (await tool(client, "request_feedback", { type: "approval", message: pmsg, wait: false }))?.session_id;
    assent("reject", await pendingOnReviewer(pmsg), "-m", "not this one");
    const got = await collect(client, sid);
    ok(got?.status === "rejected" && got.response === "not this one",
      `${era.name}: a poll request decided on another replica is collected with get_feedback (${JSON.stringify(got)?.slice(0, 120)})`);
    const lmsg = `cluster sdk ${era.name}: left for later`;
    const left = (await tool(client, "request_feedback", { type: "approval", message: lmsg, wait: false }))?.session_id;
    await pendingOnReviewer(lmsg);
    writeFileSync(`${out}/left.${era.name}`, left ?? "");
    ok(Boolean(left), `${era.name}: a poll request left pending (${left})`);
  } finally {
    await client.close().catch(() => {});
  }
}

async function collectLeft(era) {
  const sid = readFileSync(`${out}/left.${era.name}`, "utf8").trim();
  const client = await connect(era);
  try {
    const got = await collect(client, sid);
    ok(got?.status === "approved" && typeof got.approval_token === "string",
      `${era.name}: after its replica died, the left request is collected through nginx from another replica (${JSON.stringify(got)?.slice(0, 120)})`);
  } finally {
    await client.close().catch(() => {});
  }
}

for (const era of ERAS) {
  try {
    await (phase === "ask" ? ask(era) : collectLeft(era));
  } catch (e) {
    ok(false, `${era.name}: ${String(e?.message ?? e).slice(0, 200)}`);
  }
}
