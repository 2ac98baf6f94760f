// The reference server of the policy end-to-end bench (tests/bench/policy_e2e_bench.py): an MCP
// stdio server written with the official TypeScript SDK (tests/mcp/node_modules) offering
// `request_feedback` with the input shape of ref_server.mjs (ref_tool.mjs), whose "policy" allows
// everything: each call is decided at once, as assentd --policy does for an `allow` rule. Per
// decision it does the work assent does for one:
//   - signs an approval token: ES256 (node:crypto sign() over an EC P-256 key, ieee-p1363, as
//     ref_http_server.mjs does) or HS256 (node:crypto HMAC-SHA256 over FEEDBACK_TOKEN_SECRET),
//     with the claims assent's token has, roughly;
//   - appends one JSON line to the decision log and fsyncs it (each decision awaits its own
//     fsync; concurrent ones may be merged by the kernel),
// and only then answers. It checks nothing else and keeps no ledger: the floor, not a competitor.
// Usage: node tests/bench/ref_policy_server.mjs DECISION_LOG
//   REF_ALG=ES256 (default) | HS256 (the secret from FEEDBACK_TOKEN_SECRET, at least 32 bytes)
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { open } from "node:fs/promises";
import { McpServer } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js";
import { StdioServerTransport } from "../mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { description, inputSchema, title } from "./ref_tool.mjs";

const logPath = process.argv[2];
if (!logPath) {
  console.error("usage: node ref_policy_server.mjs DECISION_LOG");
  process.exit(2);
}
const alg = process.env.REF_ALG ?? "ES256";
const b64u = (b) => Buffer.from(b).toString("base64url");

let signer, kid;
if (alg === "ES256") {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = publicKey.export({ format: "jwk" });
  kid = b64u(createHash("sha256").update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })).digest());
  signer = (input) => sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
} else if (alg === "HS256") {
  const secret = Buffer.from(process.env.FEEDBACK_TOKEN_SECRET ?? "");
  if (secret.length < 32) {
    console.error("ref_policy_server: HS256 needs FEEDBACK_TOKEN_SECRET of at least 32 bytes");
    process.exit(2);
  }
  kid = b64u(createHash("sha256").update(secret).digest().subarray(0, 12));
  signer = (input) => createHmac("sha256", secret).update(input).digest();
} else {
  console.error(`ref_policy_server: REF_ALG ${alg}: ES256 or HS256`);
  process.exit(2);
}
const header = b64u(JSON.stringify({ alg, typ: "JWT", kid }));
function jwt(claims) {
  const input = `${header}.${b64u(JSON.stringify(claims))}`;
  return `${input}.${b64u(signer(input))}`;
}

const log = await open(logPath, "a", 0o600);
async function record(entry) {
  await log.appendFile(JSON.stringify(entry) + "\n");
  await log.sync();
}

const answer = (o) => ({ content: [{ type: "text", text: JSON.stringify(o) }], structuredContent: o });
const policy = { rule: 1, digest: createHash("sha256").update("allow type approval\ndefault ask\n").digest("hex") };

const server = new McpServer({ name: "assent-bench-reference-policy", version: "0.0.1" });
server.registerTool("request_feedback", { title, description, inputSchema }, async (args) => {
  const session_id = "req-" + randomBytes(16).toString("hex");
  const now = Math.floor(Date.now() / 1000);
  const action = "sha256:" + createHash("sha256").update(JSON.stringify(args)).digest("hex");
  const jti = randomBytes(16).toString("hex");
  const token = jwt({ token_type: "assent/approval/v1", iss: "assent-bench-reference", aud: args.audience ?? "default",
    sub: session_id, session_id, jti, iat: now, nbf: now, exp: now + 900, approved: true, reviewer: null,
    decision: "approved", policy, action, subject: [], assurance: "policy" });
  await record({ kind: "decision", time: Date.now(), session_id, outcome: "approved", policy, jti, kid, action, token });
  return answer({ session_id, status: "approved", approved: true, timestamp: now, approval_token: token, policy });
});

await server.connect(new StdioServerTransport());
