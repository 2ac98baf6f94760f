/* assent keygen, reviewer, admin and agent: keys and the identity registry, each change an identity entry. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"

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

/* keygen --pkcs11 made keys in a token: say which, and that no private key is in STATE. */
static void keygen_said(const struct hsm *h, const int made[2])
{
	printf("PKCS#11 token '%s': checkpoint key '%s' %s, token key '%s' %s (private keys stay in the token)\n",
	       h->cfg.token, h->cfg.ckpt_key, made[0] ? "made" : "already there", h->cfg.token_key,
	       made[1] ? "made" : "already there");
}

int cmd_keygen(const char *state, int argc, char **argv)
{
	int rotate = argc == 2 && !strcmp(argv[1], "--rotate");
	int pkcs11 = argc == 2 && !strcmp(argv[1], "--pkcs11");
	if (argc > 2 || (argc == 2 && !rotate && !pkcs11))
		return die(2, "usage: assent keygen [--rotate | --pkcs11]");
	char err[AS_ERRLEN], keys[4200];
	struct tok_config cfg;
	if (tok_config_from_env(&cfg, err) != 0)
		return die(2, "%s", err);
	if (cfg.mode != TOK_ES256) {
		tok_config_clear(&cfg);
		return die(1, "tokens are %s by FEEDBACK_SIGN_TOKENS: there is no ES256 key to make",
			   cfg.mode == TOK_OFF ? "disabled" : "HS256-signed");
	}
	int made[2] = {0, 0};
	struct hsm *h = cli_keys(1, pkcs11 ? made : NULL, err);
	if (!h)
		return die(1, "%s", err);
	if (rotate && h->cfg.on) /* a token key is never replaced in place: the old one verifies on */
		return die(1,
			   "the token key is in PKCS#11 token '%s': rotate it by making a key under a new label "
			   "(ASSENT_PKCS11_TOKEN_KEY=NEW assent keygen --pkcs11) and restarting assentd with that "
			   "label, which retires the old key (its tokens verify until they expire)",
			   h->cfg.token);
	cfg.hsm = h->tok;
	snprintf(keys, sizeof keys, "%s/" STATE_KEYS_DIR, state);
	struct ledger_opts o = {0};
	struct ledger *l;
	int rc = open_ledger(state, &o, &l);
	if (rc != 0)
		return rc;
	char kid[TOK_KID_MAX];
	struct tokkeys *tk = NULL;
	if (rotate)
		rc = tokkeys_rotate(keys, l, kid, err);
	else if ((rc = tokkeys_open(keys, &cfg, l, &tk, err)) == 0)
		snprintf(kid, sizeof kid, "%s", tokkeys_kid(tk));
	tokkeys_free(tk);
	tok_config_clear(&cfg);
	ledger_close(l);
	if (rc != 0)
		return die(2, "%s", err);
	if (pkcs11)
		keygen_said(h, made);
	printf("active token key: %s\npublic keys: %s/jwks.json and %s/token-%s.pub\n", kid, keys, keys, kid);
	return 0;
}

/* Append one entry (an object the caller made, taken here) to the ledger. */
int cli_ledger_entry(const char *state, json_t *e)
{
	char line[1024];
	char *txt = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	snprintf(line, sizeof line, "%s", txt ? txt : "");
	free(txt);
	struct buf enc;
	struct ledger_opts o = {0};
	struct ledger *l;
	int rc = line_to_cbor(line, strlen(line), 0, &enc);
	if (rc == 0)
		rc = open_ledger(state, &o, &l);
	if (rc == 0) {
		char err[AS_ERRLEN];
		struct ledger_rec r = {enc.p, enc.len};
		struct ledger_pos pos;
		if (ledger_append(l, &r, 1, &pos, err) != 0)
			rc = die(2, "%s", err);
		ledger_close(l);
	}
	buf_free(&enc);
	return rc;
}

/* Record an identity change on the ledger (never a secret: name and groups only). */
static int identity_entry(const char *state, const char *event, const char *name, const char *groups_json)
{
	json_t *g = groups_json ? json_loads(groups_json, JSON_DECODE_ANY, NULL) : json_array();
	return cli_ledger_entry(state, json_pack("{s:s,s:s,s:s,s:o}", "kind", "identity", "event", event, "name", name,
						 "groups", g ? g : json_array()));
}

/* list: a table for people, --json for machines. */
static void identity_list(const struct registry *r, const char *kind, int json)
{
	char *s = registry_list_json(r);
	json_t *j = s ? json_loads(s, 0, NULL) : NULL;
	json_t *arr = json_object_get(j, !strcmp(kind, "agent")	  ? "agents"
					 : !strcmp(kind, "admin") ? "admins"
								  : "reviewers");
	static const char *const ak[] = {"name", "audiences", "uids", "owner"};
	static const char *const ah[] = {"NAME", "AUDIENCES", "UIDS", "OWNER"};
	static const char *const rk[] = {"name", "uids", "groups", "web", "proxy_id"};
	static const char *const rh[] = {"NAME", "UIDS", "GROUPS", "WEB", "PROXY ID"};
	static const char *const nk[] = {"name"}, *const nh[] = {"NAME"};
	char *out = json ? json_dumps(arr, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
	if (json)
		printf("%s\n", out ? out : "[]");
	else if (!strcmp(kind, "agent"))
		table_print(arr, ak, ah, 4);
	else if (!strcmp(kind, "admin"))
		table_print(arr, nk, nh, 1);
	else
		table_print(arr, rk, rh, 5);
	free(out);
	free(s);
	json_decref(j);
}

/* remove NAME: off the registry, then on the ledger with the groups it had. */
static int identity_remove(struct registry *r, const char *state, const char *kind, const char *name)
{
	char err[AS_ERRLEN];
	int rc = 0;
	char *groups = NULL;
	const char *g = registry_groups_json(r, kind, name);
	if (g)
		groups = strdup(g);
	if (registry_remove(r, kind, name, err) != 0)
		rc = die(1, "%s", err);
	else if (registry_save(r, state, err) != 0)
		rc = die(2, "%s", err);
	else {
		char what[32];
		snprintf(what, sizeof what, "%s removed", kind);
		rc = identity_entry(state, what, name, groups);
	}
	free(groups);
	if (rc == 0)
		printf("removed %s %s\n", kind, name);
	return rc;
}

/* reviewer token NAME: a new web token, shown once. */
static int identity_token(struct registry *r, const char *state, const char *name)
{
	char err[AS_ERRLEN];
	int rc = 0;
	char key[REG_KEY_LEN + 1];
	if (registry_reviewer_token(r, name, key, err) != 0)
		rc = die(1, "%s", err);
	else if (registry_save(r, state, err) != 0)
		rc = die(2, "%s", err);
	else
		printf("reviewer %s: a new web token, shown this once (only a hash is kept; the old one no "
		       "longer logs in, and its web sessions end):\n%s\n",
		       name, key);
	explicit_bzero(key, sizeof key);
	return rc;
}

/* What add tells the person who ran it: the credential, shown this once, or for a stdio
 * agent the uids it is known by. */
static void identity_added_say(const char *kind, const char *name, const uid_t *uids, size_t nu, int web,
			       const char *key)
{
	char uid_list[32 * 12] = "";
	for (size_t k = 0, at = 0; k < nu && at < sizeof uid_list; k++)
		at += (size_t)snprintf(uid_list + at, sizeof uid_list - at, "%s%u", k ? ", " : "", (unsigned)uids[k]);
	if (!strcmp(kind, "agent") && nu)
		printf("agent %s added: a stdio agent, known by the uid the gateway measures (no API key). "
		       "Every stdio agent running as uid%s %s, whatever client it is, is agent %s from now on, "
		       "with its audiences.\n",
		       name, nu > 1 ? "s" : "", uid_list, name);
	else if (!strcmp(kind, "agent"))
		printf("agent %s added. Its API key, shown this once (only a hash is kept):\n%s\n", name, key);
	else if (!strcmp(kind, "admin"))
		printf("admin %s added. Its token, shown this once (only a hash is kept):\n%s\n", name, key);
	else if (web)
		printf("reviewer %s added. Its web token, shown this once (only a hash is kept):\n%s\n", name, key);
	else
		printf("reviewer %s added\n", name);
}

/* add NAME [options]: registered, saved, and on the ledger, or none of these. */
static int identity_add(struct registry *r, const char *state, const char *kind, int argc, char **argv)
{
	char err[AS_ERRLEN];
	int rc = 0;
	const char *name = argv[2], *proxy_id = NULL, *owner = NULL;
	uid_t uids[32] = {0};
	const char *multi[32];
	size_t nu = 0, nm = 0;
	int web = 0;
	for (int i = 3; i < argc && rc == 0; i++) {
		const char *opt = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t v;
		if (!strcmp(kind, "reviewer") && !strcmp(opt, "--web")) {
			web = 1;
			continue;
		}
		if (!strcmp(kind, "admin"))
			rc = die(2, "admin add NAME takes no options");
		else if (!val)
			rc = die(2, "%s add: %s needs a value", kind, opt);
		else if (strcmp(kind, "admin") && !strcmp(opt, "--uid") && nu < 32 && parse_u64(val, &v) == 0 &&
			 v < 0xffffffffu)
			uids[nu++] = (uid_t)v;
		else if (!strcmp(kind, "agent") && !strcmp(opt, "--owner"))
			owner = val;
		else if (!strcmp(kind, "reviewer") && !strcmp(opt, "--proxy-id"))
			proxy_id = val;
		else if (((!strcmp(kind, "reviewer") && !strcmp(opt, "--group")) ||
			  (!strcmp(kind, "agent") && !strcmp(opt, "--audience"))) &&
			 nm < 32)
			multi[nm++] = val;
		else
			rc = die(2, "%s add: bad option '%s %s' (see assent --help)", kind, opt, val);
		i++;
	}
	char key[REG_KEY_LEN + 1];
	if (rc == 0) {
		const struct reg_agent_opts ao = {
		    .audiences = multi, .naud = nm, .uids = uids, .nuids = nu, .owner = owner};
		int a = !strcmp(kind, "agent")	 ? registry_agent_add_opts(r, name, &ao, key, err)
			: !strcmp(kind, "admin") ? registry_admin_add(r, name, key, err)
						 : registry_reviewer_add(r, name, uids, nu, multi, nm, err);
		if (a == 0 && web)
			a = registry_reviewer_token(r, name, key, err);
		if (a == 0 && proxy_id)
			a = registry_reviewer_proxy_id(r, name, proxy_id, err);
		if (a != 0)
			rc = die(1, "%s", err);
	}
	if (rc == 0 && registry_save(r, state, err) != 0)
		rc = die(2, "%s", err);
	if (rc == 0) {
		char what[32];
		snprintf(what, sizeof what, "%s added", kind);
		rc = identity_entry(state, what, name, registry_groups_json(r, kind, name));
		/* Not on the ledger: not added either. A command succeeds whole or says it failed. */
		if (rc != 0 && (registry_remove(r, kind, name, err) != 0 || registry_save(r, state, err) != 0))
			die(rc, "%s %s is registered but its ledger entry is missing: %s", kind, name, err);
		else if (rc != 0)
			die(rc, "%s %s was not added (the ledger entry could not be written)", kind, name);
	}
	if (rc == 0)
		identity_added_say(kind, name, uids, nu, web, key);
	explicit_bzero(key, sizeof key);
	return rc;
}

int cmd_identity(const char *state, const char *kind, int argc, char **argv)
{
	char err[AS_ERRLEN];
	if (argc < 2)
		return die(2, "usage: assent %s add|list|remove ...", kind);
	struct registry *r;
	if (mkdir_p(state, 0700, err) != 0 || registry_load(state, &r, err) != 0)
		return die(2, "%s", err);
	const char *sub = argv[1];
	int rc = 0;
	if (!strcmp(sub, "list") && (argc == 2 || (argc == 3 && !strcmp(argv[2], "--json")))) {
		identity_list(r, kind, argc == 3);
	} else if (!strcmp(sub, "remove") && argc == 3) {
		rc = identity_remove(r, state, kind, argv[2]);
	} else if (!strcmp(sub, "token") && !strcmp(kind, "reviewer") && argc == 3) {
		rc = identity_token(r, state, argv[2]);
	} else if (!strcmp(sub, "add") && argc >= 3) {
		rc = identity_add(r, state, kind, argc, argv);
	} else {
		rc = die(2, "usage: assent %s add|list|remove ... (see assent --help)", kind);
	}
	registry_free(r);
	return rc;
}
