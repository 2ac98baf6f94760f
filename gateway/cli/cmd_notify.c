/* assent notify add|list|remove: the webhooks of STATE/notify.json (gateway/state/hooks.h).
 * The daemon reads the file again within a second of a change. Each change is a ledger
 * entry naming the webhook, its host and its scope (--reviewers, --groups: who may read what
 * it is told of requests restricted to named reviewers), never its secret nor its URL's path
 * (a Slack incoming webhook's path is its credential). */
#include "gateway/cli/cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "gateway/state/hooks.h"

#define SCOPE_TEXT (HOOK_SCOPE_MAX * (HOOK_SCOPE_NAME_MAX + 1) + 1)

static int hook_entry(const char *state, const char *event, const struct hook *h)
{
	char ev[64], rv[SCOPE_TEXT], gr[SCOPE_TEXT];
	hook_events_text(h->events, ev, sizeof ev);
	hook_scope_text(h->reviewers, h->nreviewers, rv, sizeof rv);
	hook_scope_text(h->groups, h->ngroups, gr, sizeof gr);
	return cli_ledger_entry(state, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "kind", "webhook", "event", event,
						 "name", h->name, "host", h->host, "events", ev, "format",
						 h->slack ? "slack" : "json", "reviewers", rv, "groups", gr));
}

/* "everyone" or "reviewers a,b groups g": what `notify add` and `list` say of a scope. */
static void scope_shown(const struct hook *h, char *out, size_t cap)
{
	char rv[SCOPE_TEXT], gr[SCOPE_TEXT];
	hook_scope_text(h->reviewers, h->nreviewers, rv, sizeof rv);
	hook_scope_text(h->groups, h->ngroups, gr, sizeof gr);
	if (!h->nreviewers && !h->ngroups)
		snprintf(out, cap, "unscoped");
	else
		snprintf(out, cap, "%s%s%s%s%s", rv[0] ? "reviewers " : "", rv, rv[0] && gr[0] ? " " : "",
			 gr[0] ? "groups " : "", gr);
}

/* scheme://host:port and "/..." for a path: what may be shown and logged of a URL. */
static void url_shown(const struct hook *h, char *out, size_t cap)
{
	int v6 = strchr(h->host, ':') != NULL;
	snprintf(out, cap, "%s://%s%s%s:%u%s", h->scheme, v6 ? "[" : "", h->host, v6 ? "]" : "", (unsigned)h->port,
		 strcmp(h->path, "/") ? "/..." : "/");
}

static int add(const char *state, struct hooks *hs, int argc, char **argv)
{
	const char *name = argv[2], *url = NULL, *format = NULL, *events = NULL, *ca = NULL, *rv = NULL, *gr = NULL;
	char err[AS_ERRLEN];
	for (int i = 3; i < argc; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **slot = !strcmp(o, "--url")		? &url
				    : !strcmp(o, "--format")	? &format
				    : !strcmp(o, "--events")	? &events
				    : !strcmp(o, "--ca")	? &ca
				    : !strcmp(o, "--reviewers") ? &rv
				    : !strcmp(o, "--groups")	? &gr
								: NULL;
		if (!slot)
			return die(2, "notify add: unknown option '%s' (see assent --help)", o);
		if (!v)
			return die(2, "notify add: %s needs a value", o);
		*slot = v;
	}
	if (!url)
		return die(2,
			   "usage: assent notify add NAME --url URL [--format json|slack] [--events LIST] [--ca FILE] "
			   "[--reviewers A,B] [--groups G,H]");
	for (size_t i = 0; i < hs->n; i++)
		if (!strcmp(hs->h[i].name, name))
			return die(1, "notify add: a webhook named %s exists (assent notify remove %s first)", name,
				   name);
	if (hs->n == HOOKS_MAX)
		return die(1, "notify add: %d webhooks already, the most there may be", HOOKS_MAX);
	struct hook *h = &hs->h[hs->n];
	if (hook_set(h, name, url, format, events, ca, err) != 0 || hook_scope_set(h, rv, gr, err) != 0)
		return die(2, "notify add: %s", err);
	uint8_t raw[32];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return die(2, "notify add: no randomness for the secret");
	memcpy(h->secret, "whsec_", 6);
	hex_encode(raw, sizeof raw, h->secret + 6);
	explicit_bzero(raw, sizeof raw);
	hs->n++;
	if (hooks_save(state, hs, err) != 0)
		return die(2, "%s", err);
	int rc = hook_entry(state, "added", h);
	if (rc != 0)
		return rc;
	char shown[400], ev[64], sc[2 * SCOPE_TEXT + 32];
	url_shown(h, shown, sizeof shown);
	hook_events_text(h->events, ev, sizeof ev);
	scope_shown(h, sc, sizeof sc);
	printf("webhook %s added (%s, %s, events %s, %s). Its signing secret, shown this once "
	       "(receivers check X-Assent-Signature with it):\n%s\n",
	       name, shown, h->slack ? "slack" : "json", ev, sc, h->secret);
	return 0;
}

int cmd_notify(const char *state, int argc, char **argv)
{
	char err[AS_ERRLEN];
	static struct hooks hs;
	if (argc < 2)
		return die(2, "usage: assent notify add|list|remove ... (see assent --help)");
	if (mkdir_p(state, 0700, err) != 0 || hooks_load(state, &hs, err) != 0)
		return die(2, "%s", err);
	const char *sub = argv[1];
	int rc;
	if (!strcmp(sub, "add") && argc >= 3) {
		rc = add(state, &hs, argc, argv);
	} else if (!strcmp(sub, "list") && (argc == 2 || (argc == 3 && !strcmp(argv[2], "--json")))) {
		json_t *arr = json_array();
		for (size_t i = 0; i < hs.n; i++) {
			char shown[400], ev[64], sc[2 * SCOPE_TEXT + 32], rv[SCOPE_TEXT], gr[SCOPE_TEXT];
			url_shown(&hs.h[i], shown, sizeof shown);
			hook_events_text(hs.h[i].events, ev, sizeof ev);
			scope_shown(&hs.h[i], sc, sizeof sc);
			hook_scope_text(hs.h[i].reviewers, hs.h[i].nreviewers, rv, sizeof rv);
			hook_scope_text(hs.h[i].groups, hs.h[i].ngroups, gr, sizeof gr);
			if (argc == 3)
				json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "name", hs.h[i].name,
								     "url", shown, "format",
								     hs.h[i].slack ? "slack" : "json", "events", ev,
								     "reviewers", rv, "groups", gr));
			else
				printf("%s\t%s\t%s\t%s\t%s\n", hs.h[i].name, shown, hs.h[i].slack ? "slack" : "json",
				       ev, sc);
		}
		if (argc == 3) {
			char *t = json_dumps(arr, JSON_INDENT(2));
			printf("%s\n", t ? t : "[]");
			free(t);
		} else if (!hs.n) {
			printf("no webhooks (assent notify add NAME --url URL)\n");
		}
		json_decref(arr);
		rc = 0;
	} else if (!strcmp(sub, "remove") && argc == 3) {
		size_t i = 0;
		while (i < hs.n && strcmp(hs.h[i].name, argv[2]))
			i++;
		if (i == hs.n)
			return die(1, "notify remove: no webhook named %s (assent notify list)", argv[2]);
		struct hook gone = hs.h[i];
		memmove(&hs.h[i], &hs.h[i + 1], (hs.n - i - 1) * sizeof hs.h[0]);
		hs.n--;
		if (hooks_save(state, &hs, err) != 0)
			return die(2, "%s", err);
		rc = hook_entry(state, "removed", &gone);
		explicit_bzero(&gone, sizeof gone);
		if (rc == 0)
			printf("webhook %s removed\n", argv[2]);
	} else {
		rc = die(2, "usage: assent notify add NAME --url URL [--format json|slack] [--events LIST] [--ca FILE] "
			    "[--reviewers A,B] [--groups G,H] | list [--json] | remove NAME");
	}
	explicit_bzero(&hs, sizeof hs);
	return rc;
}
