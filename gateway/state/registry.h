/* The identity registry (DESIGN.md "Identities"): every reviewer (name, groups,
 * Unix uids, web token hash, proxy identity), every agent (name, API key hash,
 * allowed audiences) and every admin (name, token hash), kept in
 * STATE/identities.json (0600). Secrets are shown once and stored only as SHA-256
 * hashes. A person is one reviewer whatever channel they use. */
#ifndef ASSENT_REGISTRY_H
#define ASSENT_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gateway/proto/limits.h"
#include "gateway/proto/statedir.h"
#define REG_FILE STATE_REGISTRY_FILE
#define REG_NAME_MAX PROTO_NAME_MAX /* the review worker holds names of this size too */
#define REG_KEY_LEN 46		    /* "ak_" and 43 base64url characters of 32 random bytes */

struct registry;

/* Load STATE/identities.json (absent: an empty registry). */
int registry_load(const char *state, struct registry **out, char *err);
/* Write it back atomically, mode 0600. */
int registry_save(const struct registry *r, const char *state, char *err);
void registry_free(struct registry *r);

/* Names: 1-64 characters of [A-Za-z0-9._-]. AS_EEXIST when the name is taken. */
int registry_reviewer_add(struct registry *r, const char *name, const uid_t *uids, size_t nuids,
			  const char *const *groups, size_t ngroups, char *err);
int registry_agent_add(struct registry *r, const char *name, const char *const *audiences, size_t naud,
		       char key[REG_KEY_LEN + 1], char *err);
/* An agent with more than audiences: uids register a stdio agent (the bridge's Unix
 * uid, measured by the signer; it gets no API key, key[0] is 0), owner names the
 * reviewer responsible for it, who may never decide its requests. */
struct reg_agent_opts {
	const char *const *audiences;
	size_t naud;
	const uid_t *uids;
	size_t nuids;
	const char *owner; /* a registered reviewer, or NULL */
};
int registry_agent_add_opts(struct registry *r, const char *name, const struct reg_agent_opts *o,
			    char key[REG_KEY_LEN + 1], char *err);
/* The agent registered for a stdio uid, or NULL; an agent's owner, or NULL. */
const char *registry_agent_by_uid(const struct registry *r, uid_t uid);
const char *registry_agent_owner(const struct registry *r, const char *agent);
/* Remove a reviewer, an agent or an admin ("admin") by name; AS_ENOTFOUND when neither has it. */
int registry_remove(struct registry *r, const char *kind /* "reviewer" | "agent" */, const char *name, char *err);

/* The reviewer a uid belongs to, or NULL. The string lives as long as r. */
const char *registry_reviewer_by_uid(const struct registry *r, uid_t uid);
/* The agent an API key ("ak_") belongs to (compared by hash, in constant time), or NULL. */
const char *registry_agent_by_key(const struct registry *r, const char *key, size_t len);
/* Reviewers' web tokens ("rt_") and admins' tokens ("at_") likewise. */
const char *registry_reviewer_by_token(const struct registry *r, const char *key, size_t len);
const char *registry_admin_by_token(const struct registry *r, const char *key, size_t len);
/* The reviewer a trusted proxy's identity header names (`--proxy-id`), or NULL. */
const char *registry_reviewer_by_proxy_id(const struct registry *r, const char *id);
/* Whether a reviewer of that name is registered. */
int registry_reviewer_exists(const struct registry *r, const char *name);
/* The hash of the credential a reviewer's web session is made with: via "token", their
 * web token (its stored hash, hashed again), via "proxy", their proxy identity.
 * AS_ENOTFOUND when the reviewer or that credential is gone. A session lives only
 * while this still gives the hash it was made with: a rotated or removed token, a
 * changed proxy identity or a removed reviewer ends it. */
int registry_reviewer_credential(const struct registry *r, const char *name, const char *via, uint8_t out[32]);
/* The name of the i-th reviewer (from 0), or NULL past the last. The string lives as long as r. */
const char *registry_reviewer_name(const struct registry *r, size_t i);
/* Whether uid is one of the reviewer's (the same person over another channel). */
int registry_reviewer_has_uid(const struct registry *r, const char *name, uid_t uid);
/* A new web token for a reviewer (replacing any earlier one), its proxy identity, an admin. */
int registry_reviewer_token(struct registry *r, const char *name, char key[REG_KEY_LEN + 1], char *err);
int registry_reviewer_proxy_id(struct registry *r, const char *name, const char *id, char *err);
int registry_admin_add(struct registry *r, const char *name, char key[REG_KEY_LEN + 1], char *err);
/* Whether the agent may ask for this audience. */
int registry_agent_allows(const struct registry *r, const char *agent, const char *audience);
/* The groups of a reviewer or agent, as a JSON array text for ledger entries; NULL when unknown. */
const char *registry_groups_json(const struct registry *r, const char *kind, const char *name);

/* Everything but the hashes, as JSON text (malloc'd; caller frees). */
char *registry_list_json(const struct registry *r);

#endif
