// The official SDK 2.x client (@modelcontextprotocol/client 2.4) against a running
// assentd, in each of its three version-negotiation modes and over both transports:
//   legacy           2025 `initialize` (the client's default)
//   auto             `server/discover` first, the modern era when the server offers it
//   pin 2026-07-28   the modern era exactly, no fallback (ERA_NEGOTIATION_FAILED otherwise)
//   stdio: `assentd --stdio` (the bridge), the agent measured by its uid
//   http:  Streamable HTTP with an agent key (Authorization: Bearer)
// For each: connect (and the era it negotiated), tools/list, an approval with its token,
// a rejection, an answer to an input request, a timeout; a reviewer decides through the
// real `assent` CLI. One TAP line per flow x mode x transport. Each approval's token is
// written to STATE/sdk2-TRANSPORT-MODE.token for the shell test to verify offline.
// Usage: node sdk2_flows.mjs STATE BUILD URL KEY
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const [state, build, url, key] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const short = (e) => String(e?.code ?? "") + " " + String(e?.message ?? e).replace(/\s+/g, " ").slice(0, 200);

async function pendingId(message) {
  for (let i = 0; i < 200; i++) {
    const hit = JSON.parse(assent("pending", "--json")).find((r) => r.message === message);
    if (hit) return hit.session_id;
    await sleep(50);
  }
  throw new Error(`request "${message}" never showed up in assent pending`);
}

const MODES = [
  { name: "legacy", negotiation: { mode: "legacy" }, era: "legacy" },
  { name: "auto", negotiation: { mode: "auto" }, era: "modern", version: "2026-07-28" },
  { name: "pin-2026-07-28", negotiation: { mode: { pin: "2026-07-28" } }, era: "modern", version: "2026-07-28" },
];

function transportFor(kind) {
  if (kind === "stdio")
    return new StdioClientTransport({
      command: `${build}/assentd`,
      args: ["--stdio", "--state", state],
      env: { ...process.env, ASSENT_SINGLE_USER: "1" },
      stderr: "inherit",
    });
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
}

// The flows one connection runs; each returns [passed, detail].
function flows(client, tag, tokenFile) {
  const call = (args) => client.callTool({ name: "request_feedback", arguments: args }, { timeout: 60000 });
  return [
    ["tools/list names request_feedback", async () => {
      const names = (await client.listTools()).tools.map((t) => t.name);
      return [names.includes("request_feedback"), `tools: ${names.join(",")}`];
    }],
    ["an approval comes back approved, with a token", async () => {
      const msg = `${tag}: apply?`;
      const p = call({ type: "approval", message: msg });
      assent("approve", await pendingId(msg), "-m", "go");
      const sc = (await p).structuredContent;
      const good = sc?.approved === true && sc.status === "approved" &&
        typeof sc.approval_token === "string" && sc.approval_token.split(".").length === 3;
      if (good) writeFileSync(tokenFile, sc.approval_token);
      return [good, `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["a rejection comes back rejected with its reason, no token", async () => {
      const msg = `${tag}: drop?`;
      const p = call({ type: "approval", message: msg });
      assent("reject", await pendingId(msg), "-m", "not today");
      const sc = (await p).structuredContent;
      return [sc?.approved === false && sc.status === "rejected" && sc.response === "not today" && !sc.approval_token,
        `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["an input request gets the reviewer's answer", async () => {
      const msg = `${tag}: which branch?`;
      const p = call({ type: "input", message: msg, default: "main" });
      assent("answer", await pendingId(msg), "release-2.4");
      const sc = (await p).structuredContent;
      return [sc?.status === "answered" && sc.response === "release-2.4", `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["nobody answers: a timeout, approved false", async () => {
      const sc = (await call({ type: "approval", message: `${tag}: nobody answers`, timeout_override: 1 })).structuredContent;
      return [sc?.status === "timeout" && sc.error === "timeout" && sc.approved === false,
        `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
  ];
}

for (const kind of ["stdio", "http"]) {
  for (const mode of MODES) {
    const tag = `sdk2 ${kind} ${mode.name}`;
    const client = new Client({ name: `sdk2-${kind}-${mode.name}`, version: "2.4.0" },
      { versionNegotiation: mode.negotiation });
    let connErr = null;
    try {
      await client.connect(transportFor(kind), { timeout: 30000 });
    } catch (e) {
      connErr = e;
    }
    const era = connErr ? undefined : client.getProtocolEra();
    const ver = connErr ? undefined : client.getNegotiatedProtocolVersion();
    const eraOk = !connErr && era === mode.era && (!mode.version || ver === mode.version) &&
      client.getServerVersion()?.name === "assent";
    ok(eraOk, `${tag}: connects in the ${mode.era} era${mode.version ? " at " + mode.version : ""} ` +
      `(${connErr ? "connect failed: " + short(connErr) : `era ${era}, version ${ver}, server ${client.getServerVersion()?.name}`})`);
    for (const [desc, run] of flows(client, tag, `${state}/sdk2-${kind}-${mode.name}.token`)) {
      if (connErr) {
        ok(false, `${tag}: ${desc} (not connected: ${short(connErr)})`);
        continue;
      }
      try {
        const [good, detail] = await run();
        ok(good, `${tag}: ${desc}${good ? "" : " (" + detail + ")"}`);
      } catch (e) {
        ok(false, `${tag}: ${desc} (threw: ${short(e)})`);
      }
    }
    await client.close().catch(() => {});
  }
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
