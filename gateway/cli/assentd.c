/* assentd: the daemon for one state directory (no flags) or the stdio bridge MCP
 * clients start (--stdio). Its jailed workers are another binary, assent-worker,
 * which the daemon finds beside this one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/cli/bridge.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/signer.h"
#include "common/util.h"
#include "include/assent/version.h"

static const char usage_text[] =
    "usage: assentd [--state DIR] [--policy FILE] [--upstreams FILE] [--single-user]\n"
    "               [--cluster URL] [--stdio | --daemon]\n"
    "       assentd --version | --help\n"
    "\n"
    "  (no --stdio)  run the daemon for the state directory: agents reach it on\n"
    "                STATE/agent.sock (through assentd --stdio) and over HTTP on\n"
    "                127.0.0.1:8765/mcp, reviewers with `assent`\n"
    "                on STATE/control.sock. Logs JSON lines on stderr.\n"
    "  --stdio       what MCP client configurations run: relay stdin/stdout to the\n"
    "                daemon, starting it once (detached, log in STATE/assentd.log) when\n"
    "                none runs, and saying why when it cannot. FEEDBACK_TRANSPORT=stdio\n"
    "                means the same (sse: see below; any other value is refused).\n"
    "  --daemon      the daemon whatever FEEDBACK_TRANSPORT says: what a bridge starts.\n"
    "  --policy FILE decide with a policy (assent.policy(5)): allowed and denied requests\n"
    "                are answered at once, the rest wait for the reviewers a rule names;\n"
    "                SIGHUP reloads it. Without it every request waits for a person.\n"
    "  --upstreams FILE stand in front of these MCP servers (assent.upstreams(5): the\n"
    "                clients' mcpServers JSON): agents see their tools as NAME__TOOL, and\n"
    "                every call is decided by the policy before it is forwarded.\n"
    "                ASSENT_UPSTREAM_CALL_TIMEOUT (300): seconds a forwarded call may take;\n"
    "                ASSENT_UPSTREAM_START_SECONDS (10): the wait for their tools at start.\n"
    "  --single-user accept a decision from the requester's own uid (recorded as\n"
    "                assurance same-user); ASSENT_SINGLE_USER=1 means the same.\n"
    "  --cluster URL a replica of a cluster (docs/cluster.md): the ledger is the shared one\n"
    "                in PostgreSQL (URL: postgresql://... or postgresql:KEY=VALUE...), the\n"
    "                state directory's its mirror; ASSENT_CLUSTER=URL means the same.\n"
    "                ASSENT_REPLICA (HOST-HASH of the state dir): this replica's name;\n"
    "                ASSENT_CLUSTER_LOCK (row; advisory): how commits take turns.\n"
    "\n"
    "State directory: --state DIR, else $ASSENT_STATE_DIR, else $XDG_STATE_HOME/assent,\n"
    "else ~/.local/state/assent (never the current directory).\n"
    "Environment: FEEDBACK_TIMEOUT_SECONDS (300; a bridge's own is its client's default, capped\n"
    "by ASSENT_MAX_TIMEOUT_SECONDS), FEEDBACK_SIGN_TOKENS, FEEDBACK_TOKEN_SECRET.\n"
    "Agents over HTTP (MCP Streamable HTTP on /mcp, Authorization: Bearer KEY from\n"
    "`assent agent add`): FEEDBACK_SSE_HOST (127.0.0.1), FEEDBACK_SSE_PORT (8765; off: none;\n"
    "0: any free port, see STATE/assentd.json), FEEDBACK_ALLOW_ANONYMOUS (false: loopback\n"
    "agents without a key), FEEDBACK_TRANSPORT=sse (also /sse and /messages),\n"
    "ASSENT_HTTP_ALLOWED_HOSTS, ASSENT_HTTP_ALLOWED_ORIGINS, ASSENT_HTTP_MAX_BODY,\n"
    "ASSENT_HTTP_MAX_HEADER, ASSENT_HTTP_MAX_CONNECTIONS, ASSENT_HTTP_MAX_SESSIONS,\n"
    "ASSENT_HTTP_IDLE_SECONDS, ASSENT_HTTP_REQUEST_SECONDS, ASSENT_HTTP_SESSION_IDLE_SECONDS,\n"
    "ASSENT_HTTP_SSE_POLL_SECONDS (0: off; else a 2025-11-25 call's stream is ended that often\n"
    "for its client to resume with Last-Event-ID),\n"
    "FEEDBACK_SESSION_CLEANUP_INTERVAL.\n"
    "Reviewers on the web (/review, /review/mcp, /pending, /feedback/submit, /metrics, ...):\n"
    "ASSENT_REVIEW_HOST (127.0.0.1), ASSENT_REVIEW_PORT (8766; off: none; 0: any free port),\n"
    "ASSENT_REVIEW_ALLOWED_HOSTS, ASSENT_REVIEW_ALLOWED_ORIGINS; a reverse proxy's identity\n"
    "header (ASSENT_REVIEW_PROXY_HEADER, X-Reviewer-Email) only on ASSENT_REVIEW_PROXY_SOCKET\n"
    "(ASSENT_REVIEW_PROXY_GROUP) or with ASSENT_REVIEW_PROXY_SECRET\n"
    "(see assentd(8)).\n"
    "Call records (assentd(8) CALL RECORDS): FEEDBACK_INSTRUMENTATION_MODE (off|meta|full; meta),\n"
    "ASSENT_RECORD_DATABASE (sqlite:STATE/records/calls.db; postgresql://...; mysql://...; off),\n"
    "ASSENT_RECORD_JSONL (stderr or a file), ASSENT_RECORD_PREFIX (ffb_), ASSENT_RECORD_RETENTION,\n"
    "ASSENT_RECORD_EXCLUDE_TOOLS, ASSENT_RECORD_META_ONLY_TOOLS, ASSENT_RECORD_SAMPLE_RATES,\n"
    "ASSENT_RECORD_SOFT_STATUSES, ASSENT_RECORD_REDACT_KEYS, ASSENT_RECORD_EXTRA_KEYS (the extra\n"
    "column's keys of a result), ASSENT_RECORD_QUEUE (10000),\n"
    "ASSENT_QA_PREFIX (qa), ASSENT_QA_WINDOW (15m), FEEDBACK_INSIGHTS_ENABLED (false: QA tool\n"
    "use and report metadata, never text, in /metrics and events keyed insights);\n"
    "or the upstreams file's \"records\" section.\n"
    "Workers: assent-worker, assent-recorder and assent-cluster in the directory of assentd;\n"
    "their uids when run as root: ASSENT_WORKER_UID (66000: mcp, +1: review, +2...: the\n"
    "upstream workers, +16: the recorder, +17: the notify worker, +18: the cluster client).\n";

/* FEEDBACK_TRANSPORT: unset or empty, stdio (the bridge's role unless --daemon) or
 * sse (the daemon also serves the older HTTP+SSE endpoints). Anything else is a
 * mistake in a copied configuration: refused by name rather than guessed at. */
static int transport_role(int *stdio_mode)
{
	const char *tr = getenv("FEEDBACK_TRANSPORT");
	if (!tr || !*tr || !strcmp(tr, "sse"))
		return 0;
	if (!strcmp(tr, "stdio")) {
		*stdio_mode = 1;
		return 0;
	}
	fprintf(stderr, "assentd: FEEDBACK_TRANSPORT: expected stdio or sse, got '%.32s'%s\n", tr,
		strlen(tr) > 32 ? "..." : "");
	return -1;
}

int main(int argc, char **argv)
{
	const char *state_flag = NULL, *policy = NULL, *upstreams = NULL;
	int stdio_flag = 0, daemon_flag = 0, stdio_mode = 0, single = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stdio"))
			stdio_flag = 1;
		else if (!strcmp(argv[i], "--daemon"))
			daemon_flag = 1;
		else if (!strcmp(argv[i], "--single-user"))
			single = 1;
		else if (!strcmp(argv[i], "--state") && i + 1 < argc)
			state_flag = argv[++i];
		else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			policy = argv[++i];
		else if (!strcmp(argv[i], "--upstreams") && i + 1 < argc)
			upstreams = argv[++i];
		else if (!strcmp(argv[i], "--cluster") && i + 1 < argc)
			setenv("ASSENT_CLUSTER", argv[++i], 1); /* read by the signer (cluster.c), then unset */
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			puts("assentd " ASSENT_VERSION);
			return 0;
		} else {
			fprintf(stderr, "assentd: unknown option '%s' (see assentd --help)\n", argv[i]);
			return 2;
		}
	}
	if (stdio_flag && daemon_flag) {
		fprintf(stderr, "assentd: --stdio and --daemon: one role, not both\n");
		return 2;
	}
	if (transport_role(&stdio_mode) != 0)
		return 2;
	stdio_mode = daemon_flag ? 0 : stdio_mode || stdio_flag;
	const char *su = getenv("ASSENT_SINGLE_USER");
	if (su && (!strcmp(su, "1") || !strcmp(su, "true")))
		single = 1;
	char state[4096], err[AS_ERRLEN], self[4096], worker[4096 + sizeof WORKER_EXE];
	if (state_dir_resolve(state_flag, state, sizeof state, err) != 0) {
		fprintf(stderr, "assentd: %s\n", err);
		return 2;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		fprintf(stderr, "assentd: cannot find its own binary\n");
		return 2;
	}
	self[n] = 0;
	if (policy && access(policy, R_OK) != 0) {
		fprintf(stderr, "assentd: cannot read the policy file %s\n", policy);
		return 2;
	}
	if (upstreams && access(upstreams, R_OK) != 0) {
		fprintf(stderr, "assentd: cannot read the upstreams file %s\n", upstreams);
		return 2;
	}
	if (stdio_mode) {
		struct bridge_opts b = {.state = state,
					.policy = policy,
					.upstreams = upstreams,
					.daemon_path = self,
					.single_user = single};
		return bridge_run(&b);
	}
	/* /proc/self/exe names the real file (symlinks resolved): its directory holds the workers' binary. */
	const char *slash = strrchr(self, '/');
	snprintf(worker, sizeof worker, "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".", WORKER_EXE);
	if (access(worker, X_OK) != 0) {
		fprintf(stderr, "assentd: cannot run the workers' binary %s (assent-worker belongs beside assentd)\n",
			worker);
		return 2;
	}
	char recorder[4096 + sizeof RECORDER_EXE];
	snprintf(recorder, sizeof recorder, "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".",
		 RECORDER_EXE);
	const char *mode = getenv("FEEDBACK_INSTRUMENTATION_MODE");
	if ((!mode || strcmp(mode, "off")) && access(recorder, X_OK) != 0) {
		fprintf(stderr,
			"assentd: cannot run the call recorder %s (assent-recorder belongs beside assentd; "
			"FEEDBACK_INSTRUMENTATION_MODE=off runs without it)\n",
			recorder);
		return 2;
	}
	struct signer_opts o = {
	    .state = state, .policy = policy, .upstreams = upstreams, .worker_exe = worker, .single_user = single};
	return signer_main(&o);
}
