/* The identity registry (DESIGN.md "Identities"): every reviewer (name, groups,
 * Unix uids) and every agent (name, API key hash, allowed audiences), kept in
 * STATE/identities.json (0600). Secrets are shown once and stored only as SHA-256
 * hashes. A person is one reviewer whatever channel they use. */
#ifndef ASSENT_REGISTRY_H
#define ASSENT_REGISTRY_H

#include <stddef.h>
#include <sys/types.h>

#define REG_FILE "identities.json"
#define REG_NAME_MAX 64
#define REG_KEY_LEN 46 /* "ak_" and 43 base64url characters of 32 random bytes */

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
/* Remove a reviewer or an agent by name; AS_ENOTFOUND when neither has it. */
int registry_remove(struct registry *r, const char *kind /* "reviewer" | "agent" */, const char *name, char *err);

/* The reviewer a uid belongs to, or NULL. The string lives as long as r. */
const char *registry_reviewer_by_uid(const struct registry *r, uid_t uid);
/* The agent an API key belongs to (compared by hash, in constant time), or NULL. */
const char *registry_agent_by_key(const struct registry *r, const char *key, size_t len);
/* Whether the agent may ask for this audience. */
int registry_agent_allows(const struct registry *r, const char *agent, const char *audience);
/* The groups of a reviewer or agent, as a JSON array text for ledger entries; NULL when unknown. */
const char *registry_groups_json(const struct registry *r, const char *kind, const char *name);

/* Everything but the hashes, as JSON text (malloc'd; caller frees). */
char *registry_list_json(const struct registry *r);

#endif
