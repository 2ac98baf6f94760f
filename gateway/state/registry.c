/* The identity registry as a JSON document held in memory. Read and written by
 * the signer and by `assent reviewer|agent` only; workers never see it. */
#define _GNU_SOURCE
#include "gateway/state/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ledger/merkle.h"
#include "common/util.h"

struct registry {
	json_t *doc; /* {"reviewers": [...], "agents": [...]} */
	char *groups_cache;
};

int registry_load(const char *state, struct registry **out, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
	struct registry *r = calloc(1, sizeof *r);
	if (!r)
		return as_fail(err, AS_ENOMEM, "out of memory");
	struct buf b;
	int rc = file_read(path, 16 << 20, &b, err);
	if (rc == AS_ENOTFOUND) {
		r->doc = json_pack("{s:[],s:[],s:[]}", "reviewers", "agents", "admins");
	} else if (rc == 0) {
		json_error_t je;
		r->doc = json_loadb((const char *)b.p, b.len, JSON_REJECT_DUPLICATES, &je);
		buf_free(&b);
		if (!r->doc || !json_is_array(json_object_get(r->doc, "reviewers")) ||
		    !json_is_array(json_object_get(r->doc, "agents"))) {
			json_decref(r->doc);
			free(r);
			return as_fail(err, AS_ECORRUPT, "%s is not an assent identity registry", path);
		}
		if (!json_is_array(json_object_get(r->doc, "admins"))) /* registries written before admins existed */
			json_object_set_new(r->doc, "admins", json_array());
	} else {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int registry_save(const struct registry *r, const char *state, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
	char *s = json_dumps(r->doc, JSON_INDENT(2));
	if (!s)
		return as_fail(err, AS_ENOMEM, "out of memory");
	int rc = file_write_atomic(path, s, strlen(s), 0600, err);
	free(s);
	return rc;
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	json_decref(r->doc);
	free(r->groups_cache);
	free(r);
}

static json_t *find(const struct registry *r, const char *kind, const char *name, size_t *idx)
{
	json_t *arr = json_object_get(r->doc, kind);
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && strcmp(n, name) == 0) {
			if (idx)
				*idx = i;
			return e;
		}
	}
	return NULL;
}

static int taken(const struct registry *r, const char *name)
{
	return find(r, "reviewers", name, NULL) || find(r, "agents", name, NULL) || find(r, "admins", name, NULL);
}

int registry_reviewer_add(struct registry *r, const char *name, const uid_t *uids, size_t nuids,
			  const char *const *groups, size_t ngroups, char *err)
{
	if (!name_ok(name, REG_NAME_MAX))
		return as_fail(err, AS_EINVAL, "reviewer name '%.80s': use 1-64 of A-Z a-z 0-9 . _ -", name);
	if (taken(r, name))
		return as_fail(err, AS_EEXIST, "the name '%s' is already registered", name);
	json_t *u = json_array(), *g = json_array();
	for (size_t i = 0; i < nuids; i++) {
		const json_t *e;
		size_t k;
		json_array_foreach(json_object_get(r->doc, "reviewers"), k, e)
		{
			json_t *ou;
			size_t m;
			json_array_foreach(json_object_get(e, "uids"), m, ou)
			{
				if ((uid_t)json_integer_value(ou) == uids[i]) {
					json_decref(u);
					json_decref(g);
					return as_fail(err, AS_EEXIST, "uid %u already belongs to reviewer %s",
						       (unsigned)uids[i],
						       json_string_value(json_object_get(e, "name")));
				}
			}
		}
		json_array_append_new(u, json_integer((json_int_t)uids[i]));
	}
	for (size_t i = 0; i < ngroups; i++) {
		if (!name_ok(groups[i], REG_NAME_MAX)) {
			json_decref(u);
			json_decref(g);
			return as_fail(err, AS_EINVAL, "group name '%.80s': use 1-64 of A-Z a-z 0-9 . _ -", groups[i]);
		}
		json_array_append_new(g, json_string(groups[i]));
	}
	json_array_append_new(json_object_get(r->doc, "reviewers"),
			      json_pack("{s:s,s:o,s:o}", "name", name, "uids", u, "groups", g));
	return 0;
}

/* A secret shown once: PREFIX and 43 base64url characters of 32 random bytes; hex: its SHA-256. */
static int new_secret(const char *prefix, char key[REG_KEY_LEN + 1], char hex[65])
{
	uint8_t raw[32], h[32];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -1;
	struct buf b;
	buf_init(&b, 64);
	int rc = buf_put(&b, prefix, 3) != 0 || b64url_encode(raw, sizeof raw, &b) != 0 || b.len < REG_KEY_LEN ? -1 : 0;
	explicit_bzero(raw, sizeof raw);
	if (rc != 0) {
		buf_free_wipe(&b);
		return -1;
	}
	memcpy(key, b.p, REG_KEY_LEN);
	key[REG_KEY_LEN] = 0;
	buf_free_wipe(&b);
	sha256(key, REG_KEY_LEN, h);
	hex_encode(h, 32, hex);
	return 0;
}

int registry_agent_add(struct registry *r, const char *name, const char *const *aud, size_t naud,
		       char key[REG_KEY_LEN + 1], char *err)
{
	const struct reg_agent_opts o = {.audiences = aud, .naud = naud};
	return registry_agent_add_opts(r, name, &o, key, err);
}

int registry_agent_add_opts(struct registry *r, const char *name, const struct reg_agent_opts *o,
			    char key[REG_KEY_LEN + 1], char *err)
{
	if (!name_ok(name, REG_NAME_MAX))
		return as_fail(err, AS_EINVAL, "agent name '%.80s': use 1-64 of A-Z a-z 0-9 . _ -", name);
	if (taken(r, name))
		return as_fail(err, AS_EEXIST, "the name '%s' is already registered", name);
	if (o->owner && !registry_reviewer_exists(r, o->owner))
		return as_fail(err, AS_ENOTFOUND, "--owner %.80s: no reviewer of that name (assent reviewer add NAME)",
			       o->owner);
	/* One uid is one stdio agent: its audiences and owner must not depend on entry order. */
	for (size_t i = 0; i < o->nuids; i++) {
		const char *other = registry_agent_by_uid(r, o->uids[i]);
		if (other)
			return as_fail(err, AS_EEXIST, "uid %u already belongs to agent %s", (unsigned)o->uids[i],
				       other);
	}
	json_t *a = json_array(), *u = json_array();
	for (size_t i = 0; i < o->naud; i++) {
		if (!name_ok(o->audiences[i], REG_NAME_MAX) && !strchr(o->audiences[i], '/')) {
			json_decref(a);
			json_decref(u);
			return as_fail(err, AS_EINVAL, "audience '%.80s': use A-Z a-z 0-9 . _ - /", o->audiences[i]);
		}
		json_array_append_new(a, json_string(o->audiences[i]));
	}
	for (size_t i = 0; i < o->nuids; i++)
		json_array_append_new(u, json_integer((json_int_t)o->uids[i]));
	json_t *e = json_pack("{s:s,s:o}", "name", name, "audiences", a);
	if (o->owner)
		json_object_set_new(e, "owner", json_string(o->owner));
	if (o->nuids) { /* a stdio agent: the signer measures its uid, no key to show */
		json_object_set_new(e, "uids", u);
		key[0] = 0;
	} else {
		char hex[65];
		json_decref(u);
		if (new_secret("ak_", key, hex) != 0) {
			json_decref(e);
			return as_fail(err, AS_EIO, "cannot read random bytes");
		}
		json_object_set_new(e, "key_sha256", json_string(hex));
	}
	json_array_append_new(json_object_get(r->doc, "agents"), e);
	return 0;
}

const char *registry_agent_by_uid(const struct registry *r, uid_t uid)
{
	size_t i, k;
	json_t *e, *u;
	json_array_foreach(json_object_get(r->doc, "agents"), i, e)
	{
		json_array_foreach(json_object_get(e, "uids"), k, u)
		{
			if (json_is_integer(u) && (uid_t)json_integer_value(u) == uid)
				return json_string_value(json_object_get(e, "name"));
		}
	}
	return NULL;
}

const char *registry_agent_owner(const struct registry *r, const char *agent)
{
	return json_string_value(json_object_get(find(r, "agents", agent, NULL), "owner"));
}

int registry_remove(struct registry *r, const char *kind, const char *name, char *err)
{
	const char *arr = !strcmp(kind, "reviewer") ? "reviewers"
			  : !strcmp(kind, "agent")  ? "agents"
			  : !strcmp(kind, "admin")  ? "admins"
						    : NULL;
	size_t i;
	if (!arr)
		return as_fail(err, AS_EINVAL, "unknown identity kind '%.20s'", kind);
	if (!find(r, arr, name, &i))
		return as_fail(err, AS_ENOTFOUND, "no %s named '%.80s'", kind, name);
	json_array_remove(json_object_get(r->doc, arr), i);
	return 0;
}

const char *registry_reviewer_by_uid(const struct registry *r, uid_t uid)
{
	size_t i, k;
	json_t *e, *u;
	json_array_foreach(json_object_get(r->doc, "reviewers"), i, e)
	{
		json_array_foreach(json_object_get(e, "uids"), k, u)
		{
			if (json_is_integer(u) && (uid_t)json_integer_value(u) == uid)
				return json_string_value(json_object_get(e, "name"));
		}
	}
	return NULL;
}

/* The name of the entry of KIND whose FIELD holds the hash of key (compared in constant time, all entries). */
static const char *by_hash(const struct registry *r, const char *kind, const char *field, const char *key, size_t len)
{
	uint8_t h[32], want[32];
	sha256(key, len, h);
	size_t i;
	json_t *e;
	const char *found = NULL;
	json_array_foreach(json_object_get(r->doc, kind), i, e)
	{
		const char *hex = json_string_value(json_object_get(e, field));
		if (hex && hex_decode(hex, strlen(hex), want, 32) == 0 && ct_memcmp(h, want, 32) == 0)
			found = json_string_value(json_object_get(e, "name"));
	}
	return found;
}

const char *registry_agent_by_key(const struct registry *r, const char *key, size_t len)
{
	return len == REG_KEY_LEN && !strncmp(key, "ak_", 3) ? by_hash(r, "agents", "key_sha256", key, len) : NULL;
}

const char *registry_reviewer_by_token(const struct registry *r, const char *key, size_t len)
{
	return len == REG_KEY_LEN && !strncmp(key, "rt_", 3) ? by_hash(r, "reviewers", "web_token_sha256", key, len)
							     : NULL;
}

const char *registry_admin_by_token(const struct registry *r, const char *key, size_t len)
{
	return len == REG_KEY_LEN && !strncmp(key, "at_", 3) ? by_hash(r, "admins", "token_sha256", key, len) : NULL;
}

const char *registry_reviewer_by_proxy_id(const struct registry *r, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(r->doc, "reviewers"), i, e)
	{
		const char *p = json_string_value(json_object_get(e, "proxy_id"));
		if (p && *p && !strcmp(p, id))
			return json_string_value(json_object_get(e, "name"));
	}
	return NULL;
}

int registry_reviewer_exists(const struct registry *r, const char *name)
{
	return find(r, "reviewers", name, NULL) != NULL;
}

int registry_reviewer_credential(const struct registry *r, const char *name, const char *via, uint8_t out[32])
{
	const json_t *e = find(r, "reviewers", name, NULL);
	int proxy = !strcmp(via, "proxy");
	const char *v = json_string_value(json_object_get(e, proxy ? "proxy_id" : "web_token_sha256"));
	if (!v || !*v)
		return AS_ENOTFOUND;
	struct buf b;
	buf_init(&b, 512);
	int rc = buf_printf(&b, "%s:%s", proxy ? "proxy" : "token", v) == 0 ? 0 : AS_ENOMEM;
	if (rc == 0)
		sha256(b.p, b.len, out);
	buf_free(&b);
	return rc;
}

const char *registry_reviewer_name(const struct registry *r, size_t i)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(r->doc, "reviewers"), i), "name"));
}

int registry_reviewer_has_uid(const struct registry *r, const char *name, uid_t uid)
{
	json_t *u;
	size_t i;
	json_array_foreach(json_object_get(find(r, "reviewers", name, NULL), "uids"), i, u)
	{
		if (json_is_integer(u) && (uid_t)json_integer_value(u) == uid)
			return 1;
	}
	return 0;
}

int registry_reviewer_token(struct registry *r, const char *name, char key[REG_KEY_LEN + 1], char *err)
{
	json_t *e = find(r, "reviewers", name, NULL);
	char hex[65];
	if (!e)
		return as_fail(err, AS_ENOTFOUND, "no reviewer named '%.80s'", name);
	if (new_secret("rt_", key, hex) != 0)
		return as_fail(err, AS_EIO, "cannot read random bytes");
	json_object_set_new(e, "web_token_sha256", json_string(hex));
	return 0;
}

int registry_reviewer_proxy_id(struct registry *r, const char *name, const char *id, char *err)
{
	json_t *e = find(r, "reviewers", name, NULL);
	size_t n = strlen(id);
	if (!e)
		return as_fail(err, AS_ENOTFOUND, "no reviewer named '%.80s'", name);
	if (n == 0 || n > 254)
		return as_fail(err, AS_EINVAL, "proxy identity: 1-254 characters");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] <= 0x20 || (unsigned char)id[i] >= 0x7f)
			return as_fail(err, AS_EINVAL, "proxy identity '%.80s': printable ASCII without spaces", id);
	const char *other = registry_reviewer_by_proxy_id(r, id);
	if (other && strcmp(other, name))
		return as_fail(err, AS_EEXIST, "proxy identity %s already belongs to reviewer %s", id, other);
	json_object_set_new(e, "proxy_id", json_string(id));
	return 0;
}

int registry_admin_add(struct registry *r, const char *name, char key[REG_KEY_LEN + 1], char *err)
{
	char hex[65];
	if (!name_ok(name, REG_NAME_MAX))
		return as_fail(err, AS_EINVAL, "admin name '%.80s': use 1-64 of A-Z a-z 0-9 . _ -", name);
	if (taken(r, name))
		return as_fail(err, AS_EEXIST, "the name '%s' is already registered", name);
	if (new_secret("at_", key, hex) != 0)
		return as_fail(err, AS_EIO, "cannot read random bytes");
	json_array_append_new(json_object_get(r->doc, "admins"),
			      json_pack("{s:s,s:s}", "name", name, "token_sha256", hex));
	return 0;
}

int registry_agent_allows(const struct registry *r, const char *agent, const char *audience)
{
	json_t *e = find(r, "agents", agent, NULL), *a;
	size_t i;
	json_array_foreach(json_object_get(e, "audiences"), i, a)
	{
		if (json_is_string(a) && strcmp(json_string_value(a), audience) == 0)
			return 1;
	}
	return 0;
}

const char *registry_groups_json(const struct registry *r, const char *kind, const char *name)
{
	json_t *e = find(r, !strcmp(kind, "agent") ? "agents" : "reviewers", name, NULL);
	if (!e)
		return NULL;
	struct registry *m = (struct registry *)r; /* a cache, not a change of the registry */
	free(m->groups_cache);
	json_t *g = json_object_get(e, "groups");
	m->groups_cache = json_dumps(g ? g : json_object_get(e, "audiences"), JSON_COMPACT | JSON_ENCODE_ANY);
	return m->groups_cache;
}

char *registry_list_json(const struct registry *r)
{
	json_t *out = json_pack("{s:[],s:[],s:[]}", "reviewers", "agents", "admins");
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(r->doc, "reviewers"), i, e)
	{
		json_array_append_new(json_object_get(out, "reviewers"),
				      json_pack("{s:O,s:O,s:O,s:b,s:O?}", "name", json_object_get(e, "name"), "uids",
						json_object_get(e, "uids"), "groups", json_object_get(e, "groups"),
						"web", json_object_get(e, "web_token_sha256") != NULL, "proxy_id",
						json_object_get(e, "proxy_id")));
	}
	json_array_foreach(json_object_get(r->doc, "agents"), i, e)
	{
		json_array_append_new(json_object_get(out, "agents"),
				      json_pack("{s:O,s:O,s:O?,s:O?}", "name", json_object_get(e, "name"), "audiences",
						json_object_get(e, "audiences"), "uids", json_object_get(e, "uids"),
						"owner", json_object_get(e, "owner")));
	}
	json_array_foreach(json_object_get(r->doc, "admins"), i, e)
	{
		json_array_append_new(json_object_get(out, "admins"),
				      json_pack("{s:O}", "name", json_object_get(e, "name")));
	}
	char *s = json_dumps(out, JSON_INDENT(2));
	json_decref(out);
	return s;
}
