/* The gate's public side (its files share gate_int.h besides): assent in front of upstream MCP
 * servers: calls (gate.c), answers (gate_answer.c), servers (gate_server.c), catalogs
 * (gate_catalog.c), what passes during a call (gate_relay.c), multi-round input (gatemrtr.c). */
#ifndef ASSENT_SIGNER_GATE_H
#define ASSENT_SIGNER_GATE_H

#include "gateway/signer/types.h"

/* gate.c */
int gate_start(struct signer *s);
void gate_register(struct signer *s); /* its part of a request's end (finish_hook) */
void gate_kinds(struct signer *s);    /* the upstreams' workers' kind, registered (gate_server.c) */
int gate_spawn_server(struct signer *s, int k, int *to_server, int *from_server);
void gate_worker_down(struct signer *s, int k, const char *why);
void gate_hello(struct signer *s, int k);
/* gatemrtr.c: an upstream's input_required result for c's agent, checked, with a
 * requestState of ours (NULL: err says why); a retry's state, checked against g, its
 * server's own state kept in g->ustate (AS_EINVAL: why says which check failed). */
json_t *gate_input_required(struct signer *s, const struct gcall *c, const json_t *res, char *err);
int gate_state_open(struct signer *s, struct gate_req *g, const struct cv *st, const char **why);
void gate_tick(struct signer *s);
void gate_reap(struct signer *s, pid_t p, int st);
void gate_restore(struct signer *s, const char *kind, const struct cv *e, json_t *open);
size_t gate_fds(struct signer *s, struct pollfd *pf, int *who);
void gate_stderr(struct signer *s, int i);
void gate_stop(struct signer *s);
int h_call(void *ctx, struct ipc_frame *f, char *err);
int h_up_tools(void *ctx, struct ipc_frame *f, char *err);
int h_up_result(void *ctx, struct ipc_frame *f, char *err);
int h_up_note(void *ctx, struct ipc_frame *f, char *err);
int h_up_connect(void *ctx, struct ipc_frame *f, char *err);
int gate_config(struct signer *s, int k, struct cv_arena *a, struct cv *f);
int h_up_ask(void *ctx, struct ipc_frame *f, char *err);
int h_answer(void *ctx, struct ipc_frame *f, char *err);
void gate_cancel(struct signer *s, uint64_t conn, const char *rid);
void gate_conn_end(struct signer *s, uint64_t conn);
json_t *gate_task_state(struct signer *s, const char *sid, const char *owner);
int gate_task_cancel(struct signer *s, const char *sid, const char *owner);

#endif
