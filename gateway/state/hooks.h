/* The webhooks file, STATE/notify.json (mode 0600): where the signer's notifications go.
 * Written by `assent notify add|remove` only, read by the signer once a second when it
 * changed. Each webhook: a name, a URL (common/urlsplit.h rules), a body format (json or
 * slack), the events it wants, an optional CA file for https, and its signing secret,
 * which is shown once when made and never logged nor ledgered. */
#ifndef ASSENT_HOOKS_H
#define ASSENT_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/proto/limits.h"

#define HOOKS_FILE "notify.json"
#define HOOKS_MAX PROTO_NOTIFY_HOOKS_MAX
#define HOOK_NAME_MAX 64
#define HOOK_URL_MAX 1024
#define HOOK_SECRET_LEN 70 /* "whsec_" and 64 hex digits */
#define HOOK_SCOPE_MAX 16  /* reviewers, and groups, a webhook may speak for */
#define HOOK_SCOPE_NAME_MAX 64

enum {
	HOOK_EV_REQUEST = 1,  /* request.created: a request waits for a person */
	HOOK_EV_DECISION = 2, /* request.decided: approved, rejected, answered, timed out, denied, cancelled */
	HOOK_EV_DEADLINE = 4, /* request.deadline: a fifth of its time (at most 5 minutes) is left */
	HOOK_EV_ALL = 7
};

struct hook {
	char name[HOOK_NAME_MAX + 1];
	char url[HOOK_URL_MAX + 1];
	char scheme[8], host[256], path[HOOK_URL_MAX + 1];
	uint16_t port;
	int slack;
	unsigned events;
	char secret[HOOK_SECRET_LEN + 1];
	char ca[1024]; /* a PEM file of CAs for https; "" the system's */
	/* Its scope: who reads it. A request whose rule names its reviewers is told in full
	 * only to a webhook whose reviewers include one of them (by name or group) or whose
	 * groups include a group the rule names; others learn its id and that it is
	 * restricted. None of either: unscoped. */
	char reviewers[HOOK_SCOPE_MAX][HOOK_SCOPE_NAME_MAX + 1];
	char groups[HOOK_SCOPE_MAX][HOOK_SCOPE_NAME_MAX + 1];
	size_t nreviewers, ngroups;
};

struct hooks {
	struct hook h[HOOKS_MAX];
	size_t n;
};

/* Reads STATE/notify.json (none: no webhooks). AS_ECORRUPT naming the file and the entry. */
int hooks_load(const char *state, struct hooks *out, char *err);
int hooks_save(const char *state, const struct hooks *h, char *err);
/* The file's text (path names it in errors); what hooks_load does after reading it (fuzz/hooks.c). */
int hooks_parse(const char *text, size_t n, const char *path, struct hooks *out, char *err);
/* Fills h from its parts as `assent notify add` takes them (format "json" or "slack",
 * events a comma-separated list of request, decision, deadline; NULL: all). */
int hook_set(struct hook *h, const char *name, const char *url, const char *format, const char *events, const char *ca,
	     char *err);
/* Sets h's scope from comma-separated lists (NULL or "": none), each name as a
 * reviewer's or group's name may be. */
int hook_scope_set(struct hook *h, const char *reviewers, const char *groups, char *err);
/* "a,b" for a scope list ("" for none). */
void hook_scope_text(const char (*names)[HOOK_SCOPE_NAME_MAX + 1], size_t n, char *out, size_t cap);
/* "request,decision,deadline" for the events bits. */
void hook_events_text(unsigned ev, char *out, size_t cap);

#endif
