// Passkey approvals (issue 31) end to end: reviewers enrol passkeys on the page in headless
// Chromium with the DevTools virtual authenticator, approve with them, and the gateway refuses
// every assertion that is not exactly for the decision; then an independent WebAuthn verifier
// (@simplewebauthn/server) checks every assertion the ledger stored, against a challenge this
// script computes itself from the ledger's entries (its own canonical CBOR, none of assent's).
// Prints TAP. Usage:
//   node web_passkey.mjs STATE BUILD REVIEW_BASE ALICE_TOKEN BOB_TOKEN PHASE
// PHASE "live": the daemon runs (started by web_passkey.sh); "ledger": it has stopped.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { chromium } from "playwright-core";
import { verifyAuthenticationResponse } from "@simplewebauthn/server";
import { must, tap } from "./tap.mjs";
import { spawn, spawnSync } from "node:child_process";
import { createHash, createPrivateKey, sign as ecSign } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

const [state, build, base, aliceToken, bobToken, phase, from] = process.argv.slice(2);
const WAIT = 30000; // generous: a condition, never a duration, is what is checked
const T = tap(Number(from || 0)), { ok, step } = T;
const sha = (b) => createHash("sha256").update(b).digest();
const b64u = (b) => Buffer.from(b).toString("base64url");
const origin = new URL(base).origin;

// ---- canonical CBOR (RFC 8949 4.2.1) of a map of text keys to text or unsigned values ----
function head(major, n) {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 256) return Buffer.from([(major << 5) | 24, n]);
  if (n < 65536) { const b = Buffer.alloc(3); b[0] = (major << 5) | 25; b.writeUInt16BE(n, 1); return b; }
  if (n < 2 ** 32) { const b = Buffer.alloc(5); b[0] = (major << 5) | 26; b.writeUInt32BE(n, 1); return b; }
  const b = Buffer.alloc(9); b[0] = (major << 5) | 27; b.writeBigUInt64BE(BigInt(n), 1); return b;
}
const ctext = (s) => { const u = Buffer.from(s, "utf8"); return Buffer.concat([head(3, u.length), u]); };
const cval = (v) => (typeof v === "string" ? ctext(v) : head(0, v));
function cmap(o) {
  const items = Object.entries(o).map(([k, v]) => [ctext(k), cval(v)]).sort((a, b) => Buffer.compare(a[0], b[0]));
  return Buffer.concat([head(5, items.length), ...items.flat()]);
}
// What a passkey approval commits to (docs/verification.md, section 4).
const challenge = (t) => sha(cmap({ origin: t.origin, session_id: t.sid, action: t.action, outcome: t.outcome,
  response: t.rd, scope: "request", reviewer: t.reviewer, deadline: t.deadline, v: 1 }));

if (phase === "ledger") {
  await ledgerPhase();
  T.end();
}

// ---- the live phase ----
const ASSENT = `${build}/assent`;
function request(message, extra = []) { // `assent request`, as a pipeline runs it; resolves when it ends
  const p = spawn(ASSENT, ["--state", state, "request", "--message", message, "--json", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (err += d));
  const r = new Promise((res) => p.on("close", (rc) => res({ rc, out, err })));
  r.proc = p;
  return r;
}
async function apiLogin(token) {
  const r = await fetch(`${base}/review/api/login`, { method: "POST", headers: { "Content-Type": "application/json", Origin: origin }, body: JSON.stringify({ token }) });
  const j = await r.json();
  must(r.ok && j.session, `login: ${JSON.stringify(j)}`);
  return j;
}
async function api(sess, method, path, body) {
  const headers = { Authorization: `Bearer ${sess.session}`, "X-CSRF-Token": sess.csrf, Origin: origin };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let j = {};
  try { j = await r.json(); } catch { /* the status says it */ }
  return { status: r.status, j };
}
async function sidOf(sess, message) { // the pending request with this message, once it is there
  for (let t = Date.now(); Date.now() - t < WAIT;) {
    const { j } = await api(sess, "GET", "/review/api/pending");
    const r = (j.requests || []).find((x) => x.message === message);
    if (r) return r.session_id;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`request "${message}" never showed up`);
}


async function reviewer(name, token) { // a browser with its own virtual authenticator, logged in
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.on("pageerror", (e) => pageErrors.push(`${name}: ${e.message}`));
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options: {
    protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true,
    isUserVerified: true, automaticPresenceSimulation: true } });
  await page.goto(`${base}/review`);
  await page.fill('#login input[name="token"]', token);
  await page.press('#login input[name="token"]', "Enter");
  await page.locator("#logout").waitFor({ timeout: WAIT });
  return { name, ctx, page, cdp, authenticatorId };
}
const statusText = (r) => r.page.locator("#status").textContent();
async function waitStatus(r, re) {
  await r.page.waitForFunction((src) => new RegExp(src).test(document.getElementById("status").textContent), re.source, { timeout: WAIT });
  return statusText(r);
}
// The credential the virtual authenticator made, with its private key: the test signs its
// own assertions with it to present the gateway exactly the wrong ones it must refuse.
async function credentialOf(r) {
  const { credentials } = await r.cdp.send("WebAuthn.getCredentials", { authenticatorId: r.authenticatorId });
  must(credentials.length === 1, `${credentials.length} credentials in ${r.name}'s authenticator`);
  const c = credentials[0];
  return { id: Buffer.from(c.credentialId, "base64"), key: createPrivateKey({ key: Buffer.from(c.privateKey, "base64"), format: "der", type: "pkcs8" }), count: c.signCount };
}
function assertion(cred, ch, { count, originAs = origin, rp = "localhost", flags = 0x05, type = "webauthn.get", breakSig = false } = {}) {
  const cdj = Buffer.from(JSON.stringify({ type, challenge: b64u(ch), origin: originAs, crossOrigin: false }));
  const ad = Buffer.alloc(37);
  sha(rp).copy(ad, 0);
  ad[32] = flags;
  ad.writeUInt32BE(count, 33);
  const sig = ecSign("sha256", Buffer.concat([ad, sha(cdj)]), cred.key);
  if (breakSig) sig[sig.length - 1] ^= 1;
  return { credential_id: b64u(cred.id), authenticator_data: b64u(ad), client_data_json: b64u(cdj), signature: b64u(sig) };
}
async function options(sess, sid, outcome = "approved", text) {
  const { status, j } = await api(sess, "POST", "/review/api/passkey", { op: "approve-options", session_id: sid, outcome, text });
  must(status === 200 && j.publicKey, `approve-options: ${status} ${JSON.stringify(j)}`);
  return Buffer.from(j.publicKey.challenge, "base64url");
}
const decide = (sess, sid, passkey, outcome = "approved", text) =>
  api(sess, "POST", "/review/api/decide", { session_id: sid, outcome, text, passkey });
const refused = (r, re) => r.status === 403 && re.test(String(r.j.error)) || `${r.status} ${JSON.stringify(r.j)}`;

if (phase === "restart") { // the daemon was restarted: the credentials and counts come back from the ledger
  const saved = JSON.parse(readFileSync(`${state}/../alice-cred.json`, "utf8"));
  const c = { id: Buffer.from(saved.id, "base64url"), key: createPrivateKey({ key: Buffer.from(saved.key, "base64"), format: "der", type: "pkcs8" }) };
  const sess = await apiLogin(aliceToken);
  const p = request("pk restart: after a restart");
  const sid = await sidOf(sess, "pk restart: after a restart");
  await step("after a restart, a replayed sign count is still refused (the count was read back from the ledger)", async () =>
    refused(await decide(sess, sid, assertion(c, await options(sess, sid), { count: saved.count })), /sign count/));
  await step("after a restart, the passkey enrolled before approves (the credential was read back from the ledger)", async () => {
    const r = await decide(sess, sid, assertion(c, await options(sess, sid), { count: saved.count + 1 }));
    const d = await p;
    return (r.status === 200 && d.rc === 0) || `${r.status} ${JSON.stringify(r.j)} rc ${d.rc}`;
  });
  T.end();
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
const pageErrors = [];
const A = await reviewer("alice", aliceToken), B = await reviewer("bob", bobToken);
const aS = await apiLogin(aliceToken), bS = await apiLogin(bobToken);

await step("a reviewer enrols a passkey on the page (WebAuthn registration in Chromium)", async () => {
  await A.page.click("#passkey-add");
  const t = await waitStatus(A, /Passkey added|not added/);
  return /^Passkey added for alice \(ledger seq \d+\)/.test(t) || t;
});
await step("a second reviewer enrols theirs", async () => {
  await B.page.click("#passkey-add");
  const t = await waitStatus(B, /Passkey added|not added/);
  return /^Passkey added for bob/.test(t) || t;
});
await step("enrolling the same authenticator's credential again is refused (the page excludes it)", async () => {
  await A.page.click("#passkey-add");
  const t = await waitStatus(A, /not added/);
  return /not added/.test(t) || t;
});

const one = request("pk one: drop the staging table");
let sid1;
await step("a request under assurance passkey shows 'Approve with passkey' on the page", async () => {
  sid1 = await sidOf(aS, "pk one: drop the staging table");
  await A.page.locator(`article.request[data-sid="${sid1}"] button[data-action="approve"]`).waitFor({ timeout: WAIT });
  const label = await A.page.locator(`article.request[data-sid="${sid1}"] button[data-action="approve"]`).textContent();
  return label === "Approve with passkey" || label;
});
let token1;
await step("approved in the browser with the passkey: the pipeline gets approved and a token", async () => {
  await A.page.click(`article.request[data-sid="${sid1}"] button[data-action="approve"]`);
  const r = await one;
  const j = JSON.parse(r.out || "{}");
  token1 = j.approval_token;
  return (r.rc === 0 && j.status === "approved" && typeof token1 === "string") || `rc ${r.rc} ${r.out} ${r.err}`;
});
await step("the token verifies with assent-verify token --require-passkey against the ledger", async () => {
  const aud = JSON.parse(Buffer.from(token1.split(".")[1], "base64url")).aud;
  const key = `${state}/keys/${readdirSync(`${state}/keys`).find((f) => /^token-.*\.pub$/.test(f))}`;
  const r = spawnSync(`${build}/assent-verify`, ["token", "-", "--aud", aud, "--key", key, "--ledger", `${state}/ledger`,
    "--key-from-state", "--require-passkey"], { input: token1, encoding: "utf8" });
  return r.status === 0 || `rc ${r.status}: ${r.stderr}`;
});

const two = request("pk two: rotate the database password"), three = request("pk three: delete the old backups");
const sid2 = await sidOf(aS, "pk two: rotate the database password"), sid3 = await sidOf(aS, "pk three: delete the old backups");
await step("the terminal cannot approve it: it says a passkey is needed and gives the page's link", async () => {
  const r = spawnSync(ASSENT, ["--state", state, "approve", sid2], { encoding: "utf8" });
  const want = `${origin.replace("127.0.0.1", "localhost")}/review/#${sid2}`;
  return (r.status !== 0 && /needs the reviewer's passkey/.test(r.stderr) && r.stderr.includes(want)) || `rc ${r.status}: ${r.stderr}`;
});
await step("/review/mcp cannot approve it either (submit_feedback): the same refusal and link", async () => {
  const r = await fetch(`${base}/review/mcp`, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: `Bearer ${aliceToken}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "submit_feedback", arguments: { session_id: sid2, approved: true } } }) });
  const t = await r.text();
  return (/needs the reviewer's passkey/.test(t) && t.includes(`/review/#${sid2}`)) || t.slice(0, 300);
});
await step("an approval without an assertion, sent as the page would, is refused", async () => {
  return refused(await decide(aS, sid2, undefined), /needs the reviewer's passkey/);
});

const ac = await credentialOf(A), bc = await credentialOf(B);
let count = ac.count;
await step("an assertion for another request is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid3), { count: ++count })), /not for this decision/));
await step("an assertion of another outcome is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2, "rejected", "no"), { count: ++count })), /not for this decision/));
await step("an assertion of another response (the comment changed after signing) is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2, "approved", "ok"), { count: ++count }), "approved", "ok, and more"), /not for this decision/));
await step("an assertion made for another origin is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2), { count: ++count, originAs: "https://evil.example" })), /not for this decision/));
await step("an assertion for another relying party (rpIdHash) is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2), { count: ++count, rp: "evil.example" })), /another relying party/));
await step("an assertion without user verification (UV flag) is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2), { count: ++count, flags: 0x01 })), /UP and UV/));
await step("an assertion whose signature does not verify is refused", async () =>
  refused(await decide(aS, sid2, assertion(ac, await options(aS, sid2), { count: ++count, breakSig: true })), /signature|verif/));
await step("another reviewer's passkey is refused (bob's credential in alice's decision)", async () =>
  refused(await decide(aS, sid2, assertion(bc, await options(aS, sid2), { count: bc.count + 1 })), /another reviewer/));
const held = assertion(ac, await options(aS, sid2), { count: ++count }); // valid, kept back
await step("a valid assertion for the next request approves it (its sign count moves on)", async () => {
  const r = await decide(aS, sid3, assertion(ac, await options(aS, sid3), { count: ++count }));
  const d = await three;
  return (r.status === 200 && d.rc === 0) || `${r.status} ${JSON.stringify(r.j)} rc ${d.rc}`;
});
await step("a replayed (older) assertion is refused: its sign count did not move on", async () =>
  refused(await decide(aS, sid2, held), /sign count/));
await step("a refusal needs no passkey: rejected with a reason from the page's API", async () => {
  const r = await decide(aS, sid2, undefined, "rejected", "not this week");
  const d = await two;
  return (r.status === 200 && d.rc === 1) || `${r.status} ${JSON.stringify(r.j)} rc ${d.rc}`;
});
// The authenticator in alice's browser signs on from the count the gateway saw last.
{
  const { credentials } = await A.cdp.send("WebAuthn.getCredentials", { authenticatorId: A.authenticatorId });
  await A.cdp.send("WebAuthn.removeCredential", { authenticatorId: A.authenticatorId, credentialId: credentials[0].credentialId });
  await A.cdp.send("WebAuthn.addCredential", { authenticatorId: A.authenticatorId, credential: { ...credentials[0], signCount: count + 1 } });
}
await A.page.reload();
await A.page.locator("#logout").waitFor({ timeout: WAIT });

const q = request("pk quorum: apply the production plan");
const sidq = await sidOf(aS, "pk quorum: apply the production plan");
await step("quorum 2 under passkeys: alice approves with her passkey in her browser (1 of 2)", async () => {
  const btn = A.page.locator(`article.request[data-sid="${sidq}"] button[data-action="approve"]`);
  await btn.waitFor({ timeout: WAIT });
  await btn.click();
  const t = await waitStatus(A, /1 of 2|Not recorded/);
  return /1 of 2/.test(t) || t;
});
await step("the same person cannot meet the quorum twice, passkey or not", async () => {
  const c = await credentialOf(A);
  const r = await decide(aS, sidq, assertion(c, await options(aS, sidq), { count: c.count + 1 }));
  return (r.status !== 200 && /already|counts/.test(String(r.j.error))) || `${r.status} ${JSON.stringify(r.j)}`;
});
await step("bob approves with his passkey in his browser: the quorum is met, the pipeline gets approved", async () => {
  const btn = B.page.locator(`article.request[data-sid="${sidq}"] button[data-action="approve"]`);
  await btn.waitFor({ timeout: WAIT });
  await btn.click();
  const d = await q;
  return d.rc === 0 || `rc ${d.rc} ${d.out} ${d.err}`;
});
// A gated call under assurance passkey: the MCP client's tools/call is held until alice
// approves it with her passkey; the challenge commits to the call's digest, and the call is
// forwarded once.
const agent = new Client({ name: "web-passkey-agent", version: "1.0.0" });
await agent.connect(new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", state], stderr: "inherit" }));
const call = agent.callTool({ name: "fs__write_file", arguments: { path: "approved.txt", content: "written after a passkey" } },
  undefined, { timeout: 600000, resetTimeoutOnProgress: true, onprogress: () => {} }).then((r) => r, (e) => ({ error: String(e) }));
let sidc;
await step("a gated call (fs__write_file) under assurance passkey waits on the page with 'Approve with passkey'", async () => {
  for (let t = Date.now(); !sidc && Date.now() - t < WAIT;) {
    const { j } = await api(aS, "GET", "/review/api/pending");
    sidc = (j.requests || []).find((x) => x.type === "call")?.session_id;
    if (!sidc) await new Promise((res) => setTimeout(res, 50));
  }
  const btn = A.page.locator(`article.request[data-sid="${sidc}"] button[data-action="approve"]`);
  await btn.waitFor({ timeout: WAIT });
  return (await btn.textContent()) === "Approve with passkey";
});
await step("approved with the passkey in the browser: the call is forwarded once and its result reaches the client", async () => {
  await A.page.click(`article.request[data-sid="${sidc}"] button[data-action="approve"]`);
  const r = await call;
  must(!r.error && !r.isError, `the call ended ${JSON.stringify(r).slice(0, 300)}`);
  const written = readFileSync(`${process.env.UP_ROOT}/approved.txt`, "utf8");
  const calls = readFileSync(process.env.UP_CALLS, "utf8").split("\n").filter((l) => l.startsWith("write_file "));
  return (!r.error && !r.isError && written === "written after a passkey" && calls.length === 1) ||
    `${JSON.stringify(r).slice(0, 200)}; ${calls.length} write_file calls`;
});
await agent.close();

// Removing a passkey (a lost authenticator): the reviewer's own only; then it approves nothing.
await step("a reviewer cannot remove another's passkey (alice asks to remove bob's: 404)", async () => {
  const r = await api(aS, "POST", "/review/api/passkey", { op: "remove", passkey: { credential_id: b64u(bc.id) } });
  return (r.status === 404 && /no passkey of yours/.test(r.j.error)) || `${r.status} ${JSON.stringify(r.j)}`;
});
await step("bob's page lists his passkey and removes it: a ledger entry, and the list is empty", async () => {
  await B.page.click("#passkeys summary");
  const btn = B.page.locator(`#passkey-list button.passkey-remove[data-id="${b64u(bc.id)}"]`);
  await btn.waitFor({ timeout: WAIT });
  await btn.click();
  const t = await waitStatus(B, /Passkey removed|not removed/);
  await B.page.locator("#passkey-list li", { hasText: "None yet" }).waitFor({ timeout: WAIT });
  return /^Passkey removed \(ledger seq \d+\)/.test(t) || t;
});
const late = request("pk late: after bob's passkey was removed");
const sidl = await sidOf(bS, "pk late: after bob's passkey was removed");
await step("a removed passkey approves nothing, even with a valid signature", async () =>
  refused(await decide(bS, sidl, assertion(bc, Buffer.alloc(32), { count: bc.count + 100 })), /not enrolled any more/));
await decide(aS, sidl, undefined, "rejected", "cleaning up");
await late;
ok(pageErrors.length === 0, `no script errors on the pages${pageErrors.length ? ": " + pageErrors.join("; ") : ""}`);
// The restart test (web_passkey.sh) approves one more with the credential the restarted
// daemon must have read back from the ledger: the key goes to a file the script passes on.
writeFileSync(`${state}/../alice-cred.json`, JSON.stringify({ id: b64u(ac.id), count: (await credentialOf(A)).count,
  key: ac.key.export({ format: "der", type: "pkcs8" }).toString("base64") }));
await browser.close();
T.end();

// ---- the ledger phase: every stored assertion, checked by @simplewebauthn/server ----
async function ledgerPhase() {
  const r = spawnSync(`${build}/assent-verify`, ["export", `${state}/ledger`], { encoding: "utf8", maxBuffer: 1 << 28 });
  must(r.status === 0, `export: ${r.stderr}`);
  const entries = r.stdout.trim().split("\n").map((l) => JSON.parse(l).entry);
  const ckpt = readFileSync(`${state}/ledger/checkpoint`, "utf8").split("\n")[0]; // the log's origin line
  const creds = new Map(), requests = new Map();
  let checked = 0, forgedRefused = 0;
  for (const e of entries) {
    if (e.kind === "passkey" && e.event === "enrolled") {
      const pt = Buffer.from(e.public_key, "base64url");
      const cose = Buffer.concat([Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]), pt.subarray(1, 33), Buffer.from([0x22, 0x58, 0x20]), pt.subarray(33)]);
      creds.set(e.credential_id, { ...e, cose, counter: 0 });
    }
    if (e.kind === "request" && e.terms?.assurance === "passkey") requests.set(e.session_id, e);
    if (!e.passkey || !(e.kind === "decision" || e.kind === "approval")) continue;
    const req = requests.get(e.session_id), c = creds.get(e.passkey.credential_id);
    must(req && c, `entry for ${e.session_id}: request or credential unknown`);
    const who = typeof e.reviewer === "object" ? e.reviewer.name : e.reviewer;
    const expected = b64u(challenge({ origin: ckpt, sid: e.session_id, action: req.action, outcome: e.outcome ?? "approved",
      rd: e.response_digest, reviewer: who, deadline: Number(req.deadline) }));
    const response = { id: e.passkey.credential_id, rawId: e.passkey.credential_id, type: "public-key", clientExtensionResults: {},
      response: { authenticatorData: e.passkey.authenticator_data, clientDataJSON: e.passkey.client_data_json, signature: e.passkey.signature } };
    const v = await verifyAuthenticationResponse({ response, expectedChallenge: expected, expectedOrigin: c.origin, expectedRPID: c.rp_id,
      credential: { id: c.credential_id, publicKey: c.cose, counter: c.counter }, requireUserVerification: true });
    must(v.verified, `${e.session_id}: not verified`);
    ok(who === c.reviewer, `${e.kind} ${e.session_id} (${who}): @simplewebauthn/server verifies its assertion, by the reviewer's own credential`);
    // the same assertion, had the decision said another response, fails the independent check too
    try {
      await verifyAuthenticationResponse({ response, expectedOrigin: c.origin, expectedRPID: c.rp_id, requireUserVerification: true,
        expectedChallenge: b64u(challenge({ origin: ckpt, sid: e.session_id, action: req.action, outcome: e.outcome ?? "approved",
          rd: sha("another response").toString("hex"), reviewer: who, deadline: Number(req.deadline) })),
        credential: { id: c.credential_id, publicKey: c.cose, counter: c.counter } });
    } catch { forgedRefused++; }
    c.counter = v.authenticationInfo.newCounter;
    checked++;
  }
  ok(checked >= 6, `the ledger holds ${checked} passkey assertions, each verified independently`);
  ok(forgedRefused === checked, `each of them fails the independent check for another response (${forgedRefused} of ${checked})`);
}
