/* assent: the operator and reviewer CLI. main and the usage text; each command group
 * is its own file (cli.h). Reviewer commands talk to the running daemon over
 * STATE/control.sock; operator commands work on the state directory itself. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"
#include "include/assent/version.h"

#include <getopt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdarg.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: assent [--state DIR] COMMAND ...\n"
    "       assent --version | --help\n"
    "\n"
    "Commands (reviewers; the daemon must run: assentd, or any assentd --stdio):\n"
    "  pending [--json]          requests you may decide (every page of them)\n"
    "  show ID [--json] [--full] one request with its full context; --full: a gated call's\n"
    "                            exact arguments, secrets included (ledgered as a reveal)\n"
    "  approve ID [-m TEXT]      approve (approval or confirmation)\n"
    "  reject ID -m TEXT         reject, with the reason the agent will read\n"
    "  answer ID TEXT            answer an input request (\"\" takes its default)\n"
    "  select ID N               pick option N (counting from 1, as show numbers them)\n"
    "  review                    go through the pending requests one by one\n"
    "  whoami                    the reviewer the daemon takes you for (by your uid)\n"
    "  status [--json]           the daemon's pid, pending count, uptime, ledger size,\n"
    "                            entries and commits this run, worker restarts\n"
    "\n"
    "Commands (pipelines and scripts: ask for a decision and wait for it):\n"
    "  request --message TEXT [--type approval|confirmation|input|selection]\n"
    "          [--context-file FILE] [--subject FILE]... [--audience AUD] [--timeout S]\n"
    "          [--option TEXT]... [--default TEXT] [--json] [--url URL [--ca FILE]]\n"
    "      Asks over STATE/agent.sock as the agent this uid is registered as (or with\n"
    "      --url over the HTTP listener, the key in ASSENT_AGENT_KEY); prints the\n"
    "      review link on stderr while it waits, then the approval token (the answer for\n"
    "      input and selection; the whole decision with --json) on stdout. Exit 0\n"
    "      approved or answered, 1 rejected/denied/cancelled, 3 timed out, 2 usage or I/O.\n"
    "\n"
    "Commands (operators):\n"
    "  ledger append [--batch N] [--checkpoint-every N] [--checkpoint-secs S] < ENTRIES.jsonl\n"
    "      Demo ledgers only: append entries read as JSON lines, each an object with\n"
    "      \"kind\" and the kind's fields (v, seq, time and prev are set by the ledger),\n"
    "      to STATE/ledger when it is a demo ledger or new (its checkpoints' origin is\n"
    "      assent-demo/KEYID, which assent-verify names). A gateway's ledger is refused.\n"
    "      Every line is checked before anything is written; entries are committed N\n"
    "      per durable commit (default 256). Prints {\"seq\", \"leaf_hash\"} per entry.\n"
    "  keygen [--rotate | --pkcs11]\n"
    "      Create the ES256 token signing key if there is none (STATE/keys/token-KID.key,\n"
    "      0600; public keys as token-KID.pub and keys/jwks.json), or with --rotate make\n"
    "      a new key the active one: the old private key is deleted and its public key\n"
    "      stays in the JWKS until every token it signed has expired. Prints the kid.\n"
    "      --pkcs11: make the token and checkpoint key pairs in the PKCS#11 token that\n"
    "      ASSENT_PKCS11_MODULE, _TOKEN and _PIN_FILE name (labels ASSENT_PKCS11_TOKEN_KEY,\n"
    "      _CHECKPOINT_KEY); only public keys go to STATE/keys. Refused when both exist;\n"
    "      rotate a token key in the HSM by making one under a new label.\n"
    "  reviewer add NAME [--uid UID]... [--group G]... [--web] [--proxy-id ID]\n"
    "  reviewer token NAME | reviewer list [--json] | reviewer remove NAME\n"
    "      Register a reviewer: the Unix uids whose `assent` commands decide as NAME;\n"
    "      --web (or `reviewer token NAME`) prints a token for the web page once;\n"
    "      --proxy-id is the identity a trusted reverse proxy sends for NAME.\n"
    "  admin add NAME | admin list [--json] | admin remove NAME\n"
    "      An operator for the admin endpoints; add prints its token once.\n"
    "  agent add NAME [--uid UID]... [--owner REVIEWER] [--audience A]...\n"
    "  agent list [--json] | agent remove NAME\n"
    "      Register an agent; add prints its API key once (only a hash is kept).\n"
    "      With --uid, a stdio agent known by that measured uid (no key): every stdio\n"
    "      agent of that uid is then that agent. --audience:\n"
    "      what it may ask for besides the default \"assent\"; --owner: the reviewer\n"
    "      responsible for it, who can never decide its requests.\n"
    "      Each change is an `identity` entry on the ledger.\n"
    "  notify add NAME --url URL [--format json|slack] [--events request,decision,deadline]\n"
    "             [--ca FILE] [--reviewers A,B] [--groups G,H] | notify list [--json]\n"
    "             | notify remove NAME\n"
    "      Webhooks on a new request, a decision, a deadline approaching: a signed POST\n"
    "      (X-Assent-Signature: t=T,v1=HMAC-SHA256(secret, \"T.BODY\")); add prints the\n"
    "      secret once. Kept in STATE/notify.json (0600); each change is ledgered.\n"
    "      A request whose rule names its reviewers is told in full (summary, requester)\n"
    "      only to webhooks scoped to one of them (--reviewers, or --groups for a rule's\n"
    "      group:G); others get its id, the event and \"restricted\": true.\n"
    "  ledger checkpoint\n"
    "      Sign a periodic checkpoint of the current tree now (if it grew since the\n"
    "      last periodic one) and print it. (Every commit signs its head anyway.)\n"
    "  ledger export [--cluster URL] DIR\n"
    "      A cluster's shared ledger (assentd --cluster; URL also from ASSENT_CLUSTER)\n"
    "      copied into the new directory DIR in the LMDB layout, for assent-verify\n"
    "      ledger DIR --key checkpoint.pub. Uses assent-cluster beside this program.\n"
    "  policy check FILE\n"
    "      Check a policy (assent.policy(5)): errors as FILE:LINE:COL with the offending\n"
    "      text, warnings for rules that can never match. Exit 0 when it loads, 1 when not.\n"
    "  policy test FILE REQUEST.json\n"
    "      The decision FILE makes for a request (request_feedback's arguments, plus\n"
    "      \"agent\", \"uid\" or \"client\" for who asks) and the rule that made it.\n"
    "      (assentd --policy FILE loads one; SIGHUP reloads it.)\n"
    "  qa list [--type T] [--status S] [--offset N] [--limit N] [--json]\n"
    "  qa stats [--json] | qa show ID | qa status ID STATUS | qa delete ID\n"
    "      QA reports agents filed (qa_submit_feedback), each with the calls before it\n"
    "      (show: in order, with their outcomes). status moves open -> in_progress ->\n"
    "      resolved -> closed; status and delete are for root or the daemon's own uid.\n"
    "  events KEY [--kind K]... [--by WHO] [--limit N] [--json]\n"
    "      The events recorded with this key (a request's session_id, a job id), oldest\n"
    "      first, those still queued included, each with who recorded it (agent:NAME,\n"
    "      uid:N, assent); --by WHO: only that principal's (free-form keys are each\n"
    "      principal's own namespace).\n"
    "  event KIND --key K [--attr NAME=VALUE]...\n"
    "      Record an event (root or the daemon's own uid): KIND dotted (deploy.finished),\n"
    "      VALUE as JSON when it reads as JSON, else a string. assent's own kinds\n"
    "      (approval.* assent.* call.* request.* upstream.*) are refused.\n"
    "  calls prune [--older-than D]\n"
    "      Delete call records and events older than D (30d, 12h; default: the configured\n"
    "      retention), never those linked to a report; prints the rows deleted per table.\n"
    "  upstreams check FILE\n"
    "      Check an upstreams file (assent.upstreams(5): an MCP client's mcpServers\n"
    "      JSON, plus cwd, uid, ca) and list its servers, environment and header\n"
    "      names only. Exit 0 when it is valid, 1 when not (file, server, what).\n"
    "\n"
    "The state directory is --state DIR, else $ASSENT_STATE_DIR, else\n"
    "$XDG_STATE_HOME/assent, else ~/.local/state/assent. The ledger is STATE/ledger,\n"
    "keys are in STATE/keys.\n"
    "Exit status: 0 done, 1 refused (reason on stderr), 2 usage or I/O error.\n";

int die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("assent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

/* A credential made in a state directory found by default (no --state, no
 * ASSENT_STATE_DIR) that no daemon serves is almost always a mistake: `make run` serves
 * ./var, and the key printed here is one that daemon rejects. So say so, loudly. */
static void warn_default_unserved(const char *state)
{
	char path[4200];
	int fd = ctl_connect(state, path, sizeof path), e = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (e == ENOENT || e == ECONNREFUSED)
		fprintf(stderr,
			"assent: WARNING: no daemon serves %s, the state directory found by default (no --state, "
			"no ASSENT_STATE_DIR). A daemon started on another one (make run uses ./var) does not know "
			"what this command makes: pass the daemon's --state DIR (make run prints its commands with "
			"it).\n",
			state);
}

int main(int argc, char **argv)
{
	const char *state_flag = NULL;
	/* A daemon that closes the control connection early (a worker restarting) is an
	 * error to report, not a signal to die of silently. */
	signal(SIGPIPE, SIG_IGN);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			puts("assent " ASSENT_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--state") && i + 1 < argc) {
			state_flag = argv[++i];
		} else if (!strncmp(argv[i], "--state=", 8)) {
			state_flag = argv[i] + 8;
		} else {
			return die(2, "unknown option '%s' (see assent --help)", argv[i]);
		}
	}
	if (i >= argc)
		return die(2, "missing command (see assent --help)");
	char state[4096], err[AS_ERRLEN];
	if (state_dir_resolve(state_flag, state, sizeof state, err) != 0)
		return die(2, "%s", err);
	static const char *const review_cmds[] = {"pending", "show",   "approve", "reject", "answer",
						  "select",  "review", "whoami",  "status"};
	for (size_t k = 0; k < sizeof review_cmds / sizeof *review_cmds; k++)
		if (!strcmp(argv[i], review_cmds[k]))
			return cmd_reviewer(state, argc - i, argv + i);
	if (!strcmp(argv[i], "reviewer") || !strcmp(argv[i], "agent") || !strcmp(argv[i], "admin")) {
		if (!state_flag && !getenv("ASSENT_STATE_DIR") && i + 1 < argc &&
		    (!strcmp(argv[i + 1], "add") || !strcmp(argv[i + 1], "token")))
			warn_default_unserved(state);
		return cmd_identity(state, argv[i], argc - i, argv + i);
	}
	if (!strcmp(argv[i], "qa") || !strcmp(argv[i], "events") || !strcmp(argv[i], "event") ||
	    !strcmp(argv[i], "calls"))
		return cmd_records(state, argv[i], argc - i, argv + i);
	if (!strcmp(argv[i], "notify"))
		return cmd_notify(state, argc - i, argv + i);
	if (!strcmp(argv[i], "request"))
		return cmd_request(state, argc - i, argv + i);
	if (!strcmp(argv[i], "policy"))
		return cmd_policy(argc - i, argv + i);
	if (!strcmp(argv[i], "upstreams"))
		return cmd_upstreams(argc - i, argv + i);
	if (!strcmp(argv[i], "keygen"))
		return cmd_keygen(state, argc - i, argv + i);
	if (!strcmp(argv[i], "ledger") && i + 1 < argc) {
		if (!strcmp(argv[i + 1], "append"))
			return cmd_append(state, argc - i - 1, argv + i + 1);
		if (!strcmp(argv[i + 1], "checkpoint"))
			return cmd_checkpoint(state, argc - i - 1, argv + i + 1);
		if (!strcmp(argv[i + 1], "export"))
			return cmd_export(argc - i - 1, argv + i + 1);
	}
	return die(2, "unknown command '%s' (see assent --help)", argv[i]);
}
