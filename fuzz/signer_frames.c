/* Fuzz target: the signer's handlers, driven by frames from a (compromised) mcp worker
 * or review worker over a scratch ledger (gateway/signer/testseam.h: the daemon's own receiver and
 * dispatch tables, a real ledger, queue and policy). The input is a sequence of frames,
 * each a 2-byte big-endian word and frame body bytes (canonical CBOR, as ipc_send
 * writes it): the word's low 14 bits are the body's length, its high bits say which
 * worker sent it: 00 the mcp worker, 10 the review worker, 01 and 11 the upstream worker
 * of the gate's one upstream "fx" (a stdio entry whose server is never started: the
 * frames are its worker's: its catalog, results, notes, questions), so a hostile upstream
 * worker's frames reach the gate (gate.c, gate_relay.c, gatemrtr.c) with calls the mcp
 * worker's frames made and the policy let through. A signer is opened on one state directory
 * per process, fed the frames of one input, and closed. Connection ids restart at 1 for
 * every input: agent connection 1 (uid 4242) and control connection 2 of reviewer
 * "alice" (uid 4243, registered once) exist before the first frame, so a review
 * worker's decision frames reach the decision rules and the ledger.
 * Properties (abort() when violated; the sanitizers catch the rest):
 *   - no crash, no leak, no undefined behaviour, whatever the frames say;
 *   - a refusal always comes with a message;
 *   - the ledger stays intact: av_verify_ledger passes every 64 inputs and whenever
 *     an input appended entries in its first 64 runs (the state directory is started
 *     afresh once a verification finds over 512 entries, to keep runs fast). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/assent/err.h"
#include "include/assent/verify.h"
#include "gateway/state/registry.h"
#include "gateway/signer/testseam.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The id a review frame uses for "the request queued last" (the same length as a real one). */
#define NEWEST_SID "req-00000000000000000000000000000000"

static char g_dir[64], g_policy[128], g_upstreams[128];
static unsigned long g_runs;

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "signer_frames: property violated: %s: %s\n", why, detail);
	abort();
}

static void rm_state(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s/ledger %s/keys", g_dir, g_dir);
	if (system(cmd) != 0)
		fail("cannot clear the state directory", g_dir);
}

static void verify(void)
{
	char dir[128];
	snprintf(dir, sizeof dir, "%s/ledger", g_dir);
	struct av_ledger_opts o = {.key_from_state = 1};
	struct av_ledger_report r;
	if (av_verify_ledger(dir, &o, &r) != 0 || !r.ok)
		fail("the ledger does not verify", r.reason);
	if (r.entries > 512) /* verification grows with the ledger: keep each one short */
		rm_state();
}

static void cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	if (g_dir[0] && system(cmd) != 0)
		fprintf(stderr, "signer_frames: could not remove %s\n", g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* On tmpfs when there is one: every input commits (the policy_load entry at least),
	 * and a synced commit on disk costs more than the rest of a run. */
	snprintf(g_dir, sizeof g_dir, "%s/signer_frames.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(g_dir))
		fail("mkdtemp", g_dir);
	atexit(cleanup);
	/* Decided at once, denied at once, asked (of one person, or of a quorum of two, whose
	 * first approval is an `approval` entry): every path a request can take. */
	snprintf(g_policy, sizeof g_policy, "%s/fuzz.policy", g_dir);
	FILE *f = fopen(g_policy, "w");
	static const char policy[] = "allow type confirmation\n"
				     "deny type input reason \"no\"\n"
				     "ask message ~ \"quorum\" quorum 2\n"
				     /* a selection its client may answer (multi-round input, mrtr.c) */
				     "ask type selection channels terminal,web,client\n"
				     /* the gate: calls of fx's tools go at once, so results come */
				     "allow upstream \"fx\"\n"
				     "default ask\n";
	if (!f || fputs(policy, f) < 0 || fclose(f) != 0)
		fail("cannot write the policy", g_policy);
	struct registry *reg;
	char err[AS_ERRLEN];
	uid_t alice = 4243;
	if (registry_load(g_dir, &reg, err) != 0 || registry_reviewer_add(reg, "alice", &alice, 1, NULL, 0, err) != 0 ||
	    registry_save(reg, g_dir, err) != 0)
		fail("cannot register the reviewer", err);
	registry_free(reg);
	snprintf(g_upstreams, sizeof g_upstreams, "%s/fuzz.upstreams.json", g_dir);
	f = fopen(g_upstreams, "w");
	if (!f || fputs("{\"mcpServers\": {\"fx\": {\"command\": \"/bin/true\"}}}\n", f) < 0 || fclose(f) != 0)
		fail("cannot write the upstreams file", g_upstreams);
	setenv("FEEDBACK_SIGN_TOKENS", "false", 1); /* no key per input: the token paths have their harness */
	setenv("FEEDBACK_LOG_LEVEL", "ERROR", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_dir[0])
		LLVMFuzzerInitialize(NULL, NULL);
	char err[AS_ERRLEN] = "";
	struct signer *s = signer_test_new(g_dir, g_policy, err);
	if (!s)
		fail("signer_test_new", err);
	if (signer_test_agent(s, 4242) != 1 || signer_test_reviewer(s, 4243) != 2)
		fail("the connections are not 1 (agent) and 2 (reviewer)", "");
	if (signer_test_upstreams(s, g_upstreams, err) != 0)
		fail("signer_test_upstreams", err);
	uint64_t before = signer_test_ledger_size(s);
	size_t off = 0;
	while (off + 2 <= size) {
		size_t n = (size_t)(data[off] & 0x3f) << 8 | data[off + 1];
		int review = (data[off] & 0xc0) == 0x80, upstream = (data[off] & 0x40) != 0;
		off += 2;
		if (n > size - off)
			n = size - off;
		err[0] = 0;
		/* Session ids are random, so no input could name a pending request and a decision
		 * (or a task operation) would stop before the rules: a frame that names NEWEST_SID
		 * (a well-formed id no request gets) is given the id of the request queued last. */
		static uint8_t body[32768];
		memcpy(body, data + off, n);
		char sid[37];
		uint8_t *at = n >= 36 ? memmem(body, n, NEWEST_SID, 36) : NULL;
		if (at && signer_test_newest_sid(s, sid) == 0)
			memcpy(at, sid, 36);
		int rc = upstream ? signer_test_frame_up(s, 0, body, n, err)
				  : signer_test_frame_from(s, review, body, n, err);
		if (rc != 0 && !err[0])
			fail("a refusal without a message", "");
		signer_test_drain(s);
		off += n;
	}
	int grew = signer_test_ledger_size(s) != before;
	signer_test_free(s);
	if (++g_runs % 64 == 0 || (grew && g_runs < 64))
		verify();
	return 0;
}
