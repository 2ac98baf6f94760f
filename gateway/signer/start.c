/* Starting the signer: the state directory and its lock, the limits, then (after the
 * workers are forked, loop.c) the ledger, keys, registry and policy, and what a
 * previous run left pending (restore.c). Each step returns 0 or the exit status; the log says why. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int write_info(struct signer *s, char *err)
{
	char path[4200], rp[4096], kid[24] = "";
	snprintf(path, sizeof path, "%s/%s", s->o->state, STATE_INFO_FILE);
	if (s->tcfg.mode == TOK_HS256)
		hs256_kid(s->tcfg.secret, s->tcfg.secret_len, kid);
	char http[300] = "", review[300] = "";
	if (s->http_fd >= 0)
		snprintf(http, sizeof http, strchr(s->http.host, ':') ? "[%s]:%u" : "%s:%u", s->http.host,
			 s->http.port);
	if (s->review_fd >= 0)
		snprintf(review, sizeof review, strchr(s->review.host, ':') ? "[%s]:%u" : "%s:%u", s->review.host,
			 s->review.port);
	json_t *j = json_pack(
	    "{s:I,s:s,s:s?,s:s,s:s?,s:b,s:I,s:s?,s:b}", "pid", (json_int_t)getpid(), "version", ASSENT_VERSION,
	    "policy", s->o->policy && realpath(s->o->policy, rp) ? rp : s->o->policy, "token_mode",
	    s->tcfg.mode == TOK_ES256	? "ES256"
	    : s->tcfg.mode == TOK_HS256 ? "HS256"
					: "off",
	    "token_secret_kid", kid[0] ? kid : NULL, "single_user", s->o->single_user, "timeout_seconds",
	    (json_int_t)s->timeout_s, "http", http[0] ? http : NULL, "anonymous", s->http_fd >= 0 && s->http.anonymous);
	if (j && review[0])
		json_object_set_new(j, "review", json_string(review));
	char ru[4096];
	if (j && s->o->upstreams)
		json_object_set_new(j, "upstreams", json_string(realpath(s->o->upstreams, ru) ? ru : s->o->upstreams));
	if (j && s->proxy_fd >= 0)
		json_object_set_new(j, "review_proxy", json_string(s->proxy_path));
	if (j) /* FEEDBACK_INSIGHTS_ENABLED: a bridge whose own says otherwise says so */
		json_object_set_new(j, "insights", json_boolean(s->recs.insights));
	char *txt = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	int rc = txt ? file_write_atomic(path, txt, strlen(txt), 0644, err) : AS_ENOMEM;
	free(txt);
	return rc;
}

/* The log level, the state directory, and the lock that makes this its one daemon
 * (held, open, until the process ends). */
int start_state(const struct signer_opts *o)
{
	const char *ll = getenv("FEEDBACK_LOG_LEVEL");
	if (ll && *ll) {
		int r = log_rank(ll);
		if (r < 0 || r > 3) {
			slog("error", "FEEDBACK_LOG_LEVEL: expected DEBUG, INFO, WARNING or ERROR, got '%.32s'", ll);
			return 2;
		}
		log_min = r;
	}
	char err[AS_ERRLEN], path[4200];
	if (mkdir_p(o->state, 0700, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	/* One daemon per state directory. */
	snprintf(path, sizeof path, "%s/" STATE_LOCK_FILE, o->state);
	int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0) { /* not another daemon: this user cannot write the directory (or the file) */
		slog("error",
		     "cannot open %s: %s (the state directory must be writable by the user assentd runs as, uid %u)",
		     path, strerror(errno), (unsigned)getuid());
		return 2;
	}
	if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
		slog("error", "another assentd already serves %s", o->state);
		return 1;
	}
	return 0;
}

/* The default deadline and the limits per principal. */
int start_limits(struct signer *s)
{
	char err[AS_ERRLEN];
	const char *t = getenv("FEEDBACK_TIMEOUT_SECONDS");
	uint64_t tv = 300;
	if (t && *t && (parse_u64(t, &tv) != 0 || tv == 0 || tv > TIMEOUT_MAX_S)) {
		slog("error", "FEEDBACK_TIMEOUT_SECONDS must be 1 to %d, not '%.16s'", TIMEOUT_MAX_S, t);
		return 2;
	}
	s->timeout_s = (uint32_t)tv;
	/* Consistency proofs for witnesses (GET /checkpoint/consistency) each read the ledger's
	 * tiles in this loop (ledger/tiles.h; a ledger from before tiles, every entry up to their
	 * size): served when the operator says so, since the listener takes anyone's request. */
	const char *cp = getenv("ASSENT_CONSISTENCY_PROOFS");
	if (cp && *cp && strcmp(cp, "on") != 0 && strcmp(cp, "off") != 0) {
		slog("error", "ASSENT_CONSISTENCY_PROOFS must be on or off, not '%.16s'", cp);
		return 2;
	}
	s->consistency_proofs = cp && !strcmp(cp, "on");
	if (lim_from_env(&s->lim.c, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (s->timeout_s > s->lim.c.max_timeout_s) { /* the cap holds for the default too */
		slog("warning", "FEEDBACK_TIMEOUT_SECONDS=%u is over ASSENT_MAX_TIMEOUT_SECONDS=%u: requests wait %u s",
		     s->timeout_s, s->lim.c.max_timeout_s, s->lim.c.max_timeout_s);
		s->timeout_s = s->lim.c.max_timeout_s;
	}
	return 0;
}

/* The ledger, the keys and secrets, the registry and the policy: after the workers. */
int start_keys(struct signer *s)
{
	char err[AS_ERRLEN], ldir[4200], kdir[4200];
	snprintf(ldir, sizeof ldir, "%s/" STATE_LEDGER_DIR, s->o->state);
	snprintf(kdir, sizeof kdir, "%s/" STATE_KEYS_DIR, s->o->state);
	struct ledger_opts lo = {.keys_dir = kdir};
	/* An unsigned tail (an older assent crashed) is signed only when the operator says how long it is. */
	const char *adopt = getenv("ASSENT_ADOPT_UNSIGNED_TAIL");
	if (adopt && *adopt && parse_u64(adopt, &lo.adopt_unsigned_tail) != 0) {
		slog("error", "ASSENT_ADOPT_UNSIGNED_TAIL must be a number of entries, not '%.16s'", adopt);
		return 2;
	}
	if (tok_config_from_env(&s->tcfg, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	/* Keys in a PKCS#11 token: the module is loaded here, after the workers were forked
	 * and exec'd (they never hold it); every worker started later is exec'd too, and the
	 * session refuses use from a forked child. A failure is fatal: never files instead. */
	if (hsm_open(&s->hsm, s->tcfg.mode == TOK_ES256, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (s->hsm.cfg.on) {
		lo.signer = &s->hsm.signer;
		s->tcfg.hsm = s->hsm.tok;
		slog("info", "keys in PKCS#11 token '%s': checkpoint key '%s'%s%s%s", s->hsm.cfg.token,
		     s->hsm.cfg.ckpt_key, s->hsm.tok ? ", token key '" : "", s->hsm.tok ? s->hsm.cfg.token_key : "",
		     s->hsm.tok ? "'" : "");
	}
	/* Cluster mode: the ledger is the cluster's, this one its mirror (cluster.c). */
	if (cluster_setup(s, &lo, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (ledger_open(ldir, &lo, &s->ledger, err) != 0 || tokkeys_open(kdir, &s->tcfg, s->ledger, &s->tk, err) != 0 ||
	    pq_new(PQ_MAX, &s->q) != 0) {
		slog("error", "%s", err);
		ledger_close(s->ledger);
		s->ledger = NULL;
		s->tcfg.hsm = NULL;
		hsm_close(&s->hsm);
		return 2;
	}
	/* Secrets stay in the signer: clear them from the environment it may pass on. */
	unsetenv("FEEDBACK_TOKEN_SECRET");
	reload_registry(s);
	cv_arena_init(&s->arena, 1u << 20);
	if (passkey_setup(s, err) != 0) { /* before the scan below, which enrols the ledger's passkeys */
		slog("error", "%s", err);
		return 2;
	}
	restore_pending(s); /* what a previous run left pending (restore.c) */
	restore_history(s); /* and the page's history of its decisions */
	if (load_policy(s, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (write_info(s, err) != 0)
		slog("warning", "%s", err);
	return 0;
}

void start_banner(const struct signer *s)
{
	const struct signer_opts *o = s->o;
	if (o->single_user)
		slog("warning",
		     "SINGLE-USER MODE: a decision from the same uid as the requester is accepted and recorded "
		     "as assurance same-user. An agent running as your user can approve its own requests: this "
		     "protects against mistakes, not against a hostile agent.");
	slog("info", "assentd %s serving %s (pid %d)", ASSENT_VERSION, o->state, (int)getpid());
	if (s->http_fd >= 0)
		slog("info", "agents over HTTP: http://%s:%u/mcp (%s)", s->http.host, s->http.port,
		     s->http.anonymous ? "API key, or none from loopback" : "API key required");
	if (s->review_fd >= 0)
		slog("info", "reviewers on the web: http://%s:%u/review", s->review.host, s->review.port);
	if (s->proxy_fd >= 0)
		slog("info", "reverse proxy's socket: %s (identity header %s)", s->proxy_path, s->proxy_header);
}
