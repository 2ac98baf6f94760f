/* The mcp worker's share of the call records (issue 16): it sees every tools/call begin and
 * end, so it times each one, sizes its arguments and result, classifies its outcome (ok, a
 * soft error the tool returned as data, or an error), applies exclusion and sampling, and
 * sends one F_CALLREC per recorded call. It never decides who made the call: the signer adds
 * the identity it measured. Nothing here changes what the client receives. */
#ifndef ASSENT_CALLREC_H
#define ASSENT_CALLREC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct callrec;

/* From the records configuration the signer sent (reccfg.h JSON; NULL: recording off). */
struct callrec *callrec_new(const json_t *cfg, int ipcfd, char *err);
void callrec_free(struct callrec *t);

/* A tools/call began: params as the client sent them; upstream: the gate's upstream the
 * tool belongs to, or NULL for assent's own; client: what the client declared of itself. */
void callrec_begin(struct callrec *t, uint64_t conn, const char *rid, const json_t *params, const char *upstream,
		   const char *client);
/* Whether results are kept (mode full): the caller then parses one it would only splice. */
int callrec_keeps(const struct callrec *t);
/* Whether (conn, rid) is a call being recorded. */
int callrec_open(const struct callrec *t, uint64_t conn, const char *rid, size_t ridn);
/* Its answer: a CallToolResult (result), or a JSON-RPC error object (error); rsz: the bytes
 * of the answer's JSON. Sends the record, unless sampled out. */
void callrec_end(struct callrec *t, uint64_t conn, const char *rid, size_t ridn, const json_t *result,
		 const json_t *error, size_t rsz);
/* Send the records gathered since the last flush as one F_CALLRECS: once per turn of the
 * worker's loop, and before any frame that must come after them (a connection's end, a QA
 * report that links them). */
void callrec_flush(struct callrec *t);
/* The client's connection ended: its unanswered calls are recorded as errors (and flushed). */
void callrec_conn_gone(struct callrec *t, uint64_t conn);
/* The worker went idle: with no call open, the slot table's memory goes back to the kernel. */
void callrec_idle(struct callrec *t);

#endif
