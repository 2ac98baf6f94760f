/* STATE/notify.json (hooks.h): {"webhooks": [{name, url, format, events: [...], secret, ca?,
 * reviewers?: [...], groups?: [...]}]}. */
#include "gateway/state/hooks.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/urlsplit.h"
#include "common/util.h"

static const char *const EV_NAMES[] = {"request", "decision", "deadline"};

void hook_events_text(unsigned ev, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	for (unsigned i = 0; i < 3; i++)
		if (ev & (1u << i) && n < cap)
			n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", EV_NAMES[i]);
}

static int events_of(const char *list, unsigned *ev, char *err)
{
	*ev = 0;
	if (!list) {
		*ev = HOOK_EV_ALL;
		return 0;
	}
	for (const char *t = list; *t;) {
		size_t n = strcspn(t, ","), i = 0;
		while (i < 3 && (strlen(EV_NAMES[i]) != n || strncmp(t, EV_NAMES[i], n)))
			i++;
		if (i == 3)
			return as_fail(err, AS_EINVAL, "--events: '%.*s' is not an event (request, decision, deadline)",
				       (int)(n < 32 ? n : 32), t);
		*ev |= 1u << i;
		t += n + (t[n] == ',');
	}
	return *ev ? 0 : as_fail(err, AS_EINVAL, "--events: no event named (request, decision, deadline)");
}

int hook_set(struct hook *h, const char *name, const char *url, const char *format, const char *events, const char *ca,
	     char *err)
{
	memset(h, 0, sizeof *h);
	if (!name_ok(name, HOOK_NAME_MAX))
		return as_fail(err, AS_EINVAL, "webhook name '%.64s': 1 to %d letters, digits, '.', '_' or '-'", name,
			       HOOK_NAME_MAX);
	snprintf(h->name, sizeof h->name, "%s", name);
	struct url_parts p;
	char why[AS_ERRLEN];
	if (!url || strlen(url) > HOOK_URL_MAX)
		return as_fail(err, AS_EINVAL, "webhook %s: --url is missing or longer than %d bytes", name,
			       HOOK_URL_MAX);
	if (url_split(url, &p, why, sizeof why) != 0)
		return as_fail(err, AS_EINVAL, "webhook %s: --url %s", name, why);
	snprintf(h->url, sizeof h->url, "%s", url);
	snprintf(h->scheme, sizeof h->scheme, "%s", p.scheme);
	snprintf(h->host, sizeof h->host, "%s", p.host);
	snprintf(h->path, sizeof h->path, "%s", *p.path ? p.path : "/");
	h->port = p.port;
	if (format && strcmp(format, "json") && strcmp(format, "slack"))
		return as_fail(err, AS_EINVAL, "webhook %s: --format '%.32s': json or slack", name, format);
	h->slack = format && !strcmp(format, "slack");
	if (ca && (strlen(ca) >= sizeof h->ca || ca[0] != '/'))
		return as_fail(err, AS_EINVAL, "webhook %s: --ca must be an absolute path (the daemon reads it)", name);
	if (ca)
		snprintf(h->ca, sizeof h->ca, "%s", ca);
	return events_of(events, &h->events, err);
}

static int scope_of(const char *what, const char *list, char (*names)[HOOK_SCOPE_NAME_MAX + 1], size_t *n, char *err)
{
	*n = 0;
	for (const char *t = list ? list : ""; *t;) {
		size_t len = strcspn(t, ",");
		char one[HOOK_SCOPE_NAME_MAX + 2];
		snprintf(one, sizeof one, "%.*s", (int)(len < HOOK_SCOPE_NAME_MAX + 1 ? len : HOOK_SCOPE_NAME_MAX + 1),
			 t);
		if (len > HOOK_SCOPE_NAME_MAX || !name_ok(one, HOOK_NAME_MAX))
			return as_fail(err, AS_EINVAL,
				       "--%s: '%.*s' is not a name (1 to %d letters, digits, '.', '_', '-')", what,
				       (int)(len < 64 ? len : 64), t, HOOK_SCOPE_NAME_MAX);
		if (*n == HOOK_SCOPE_MAX)
			return as_fail(err, AS_EINVAL, "--%s: more than %d names", what, HOOK_SCOPE_MAX);
		snprintf(names[(*n)++], HOOK_SCOPE_NAME_MAX + 1, "%.*s", HOOK_SCOPE_NAME_MAX, one);
		t += len + (t[len] == ',');
	}
	return 0;
}

int hook_scope_set(struct hook *h, const char *reviewers, const char *groups, char *err)
{
	int rc = scope_of("reviewers", reviewers, h->reviewers, &h->nreviewers, err);
	if (rc == 0)
		rc = scope_of("groups", groups, h->groups, &h->ngroups, err);
	if (rc != 0)
		h->nreviewers = h->ngroups = 0;
	return rc;
}

void hook_scope_text(const char (*names)[HOOK_SCOPE_NAME_MAX + 1], size_t n, char *out, size_t cap)
{
	size_t used = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && used < cap; i++)
		used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", names[i]);
}

/* A JSON list of names as "a,b" for hook_scope_set; 0 when it is no such list. */
static int list_text(const json_t *arr, char *out, size_t cap)
{
	size_t used = 0;
	out[0] = 0;
	if (!arr)
		return 1;
	if (!json_is_array(arr) || json_array_size(arr) > HOOK_SCOPE_MAX)
		return 0;
	for (size_t k = 0; k < json_array_size(arr); k++) {
		const char *e = json_string_value(json_array_get(arr, k));
		if (!e || !*e || strchr(e, ',') || strlen(e) > HOOK_SCOPE_NAME_MAX)
			return 0;
		used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", e);
	}
	return 1;
}

static const char *text_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int hooks_parse(const char *text, size_t n, const char *path, struct hooks *out, char *err)
{
	memset(out, 0, sizeof *out);
	json_error_t je;
	json_t *doc = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	const json_t *arr = json_object_get(doc, "webhooks");
	if (!json_is_array(arr) || json_array_size(arr) > HOOKS_MAX) {
		json_decref(doc);
		return as_fail(err, AS_ECORRUPT, "%s: not a webhooks file (%s)", path,
			       doc ? "no \"webhooks\" array of at most 16" : je.text);
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *w = json_array_get(arr, i), *evs = json_object_get(w, "events");
		const char *nm = text_of(w, "name"), *sec = text_of(w, "secret");
		char list[64] = "", e2[AS_ERRLEN] = "";
		static char rv[HOOK_SCOPE_MAX * (HOOK_SCOPE_NAME_MAX + 1) + 1], gr[sizeof rv];
		if (!list_text(json_object_get(w, "reviewers"), rv, sizeof rv) ||
		    !list_text(json_object_get(w, "groups"), gr, sizeof gr)) {
			json_decref(doc);
			memset(out, 0, sizeof *out);
			return as_fail(err, AS_ECORRUPT,
				       "%s: webhook %zu: \"reviewers\" or \"groups\" is not a list of at most %d names",
				       path, i, HOOK_SCOPE_MAX);
		}
		if (evs && (!json_is_array(evs) || json_array_size(evs) > 3)) {
			json_decref(doc);
			memset(out, 0, sizeof *out); /* all or nothing */
			return as_fail(err, AS_ECORRUPT, "%s: webhook %zu: \"events\" is not a list of at most 3", path,
				       i);
		}
		for (size_t k = 0; k < json_array_size(evs); k++) {
			const char *e = json_string_value(json_array_get(evs, k));
			size_t used = strlen(list);
			snprintf(list + used, sizeof list - used, "%s%.10s", used ? "," : "", e ? e : "?");
		}
		struct hook *h = &out->h[out->n];
		for (size_t k = 0; k < out->n && nm; k++)
			if (!strcmp(out->h[k].name, nm))
				nm = NULL; /* a name twice: refused below */
		if (!nm || !sec || strlen(sec) != HOOK_SECRET_LEN || strncmp(sec, "whsec_", 6) ||
		    hook_set(h, nm, text_of(w, "url"), text_of(w, "format"), evs ? list : NULL, text_of(w, "ca"), e2) !=
			0 ||
		    hook_scope_set(h, rv, gr, e2) != 0) {
			json_decref(doc);
			memset(out, 0, sizeof *out);
			return as_fail(err, AS_ECORRUPT, "%s: webhook %zu: %s", path, i,
				       e2[0] ? e2 : "no name (or one used twice), or no whsec_ secret");
		}
		snprintf(h->secret, sizeof h->secret, "%s", sec);
		out->n++;
	}
	json_decref(doc);
	return 0;
}

int hooks_load(const char *state, struct hooks *out, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, HOOKS_FILE);
	memset(out, 0, sizeof *out);
	struct buf b;
	int rc = file_read(path, 1 << 20, &b, err);
	if (rc == AS_ENOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	rc = hooks_parse((const char *)b.p, b.len, path, out, err);
	explicit_bzero(b.p, b.len);
	buf_free(&b);
	return rc;
}

int hooks_save(const char *state, const struct hooks *hs, char *err)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < hs->n; i++) {
		const struct hook *h = &hs->h[i];
		json_t *ev = json_array();
		for (unsigned k = 0; k < 3; k++)
			if (h->events & (1u << k))
				json_array_append_new(ev, json_string(EV_NAMES[k]));
		json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:s}", "name", h->name, "url", h->url, "format",
				      h->slack ? "slack" : "json", "events", ev, "secret", h->secret);
		if (o && h->ca[0])
			json_object_set_new(o, "ca", json_string(h->ca));
		json_t *rv = json_array(), *gr = json_array();
		for (size_t k = 0; k < h->nreviewers; k++)
			json_array_append_new(rv, json_string(h->reviewers[k]));
		for (size_t k = 0; k < h->ngroups; k++)
			json_array_append_new(gr, json_string(h->groups[k]));
		if (o && h->nreviewers)
			json_object_set(o, "reviewers", rv);
		if (o && h->ngroups)
			json_object_set(o, "groups", gr);
		json_decref(rv);
		json_decref(gr);
		json_array_append_new(arr, o);
	}
	json_t *doc = json_pack("{s:o}", "webhooks", arr);
	char *txt = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
	json_decref(doc);
	if (!txt)
		return as_fail(err, AS_ENOMEM, "out of memory");
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, HOOKS_FILE);
	int rc = file_write_atomic(path, txt, strlen(txt), 0600, err);
	explicit_bzero(txt, strlen(txt));
	free(txt);
	return rc;
}
