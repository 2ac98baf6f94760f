/* The names inside the state directory (--state DIR, DESIGN.md "One daemon per state
 * directory"), in one place: the daemon creates them, the bridge and `assent` find
 * the daemon through them. */
#ifndef ASSENT_PROTO_STATEDIR_H
#define ASSENT_PROTO_STATEDIR_H

#define STATE_AGENT_SOCK "agent.sock"	      /* agents: the stdio bridge connects here */
#define STATE_CONTROL_SOCK "control.sock"     /* reviewers and operators: `assent` */
#define STATE_INFO_FILE "assentd.json"	      /* what the running daemon was started with */
#define STATE_LOCK_FILE "assentd.lock"	      /* one daemon per state directory */
#define STATE_REGISTRY_FILE "identities.json" /* reviewers and agents (hashes only) */
#define STATE_LEDGER_DIR "ledger"	      /* the LMDB environment */
#define STATE_KEYS_DIR "keys"		      /* token and checkpoint keys */
#define STATE_TOKEN_INDEX "token-keys.json"   /* in keys/: which token key is active */
#define STATE_JWKS "jwks.json"		      /* in keys/: the token keys' public halves */
#define STATE_RECORDS_DIR "records"	      /* the call records' SQLite database, all the recorder may touch */
#define STATE_EXACT_DIR "exact"		      /* exact calls whose view masks something, by digest (0700) */
#define STATE_RECORDS_DB "calls.db"	      /* in records/, and STATE/calls.db links to it */

#endif
