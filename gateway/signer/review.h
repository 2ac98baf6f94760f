/* The reviewer side: who may decide and deciding (decide.c), what reviewers are shown (view.c), the
 * control socket's commands (ctl.c), the exact call revealed (exact.c), the web page's commands
 * (web.c) and its pushes (webpush.c). */
#ifndef ASSENT_SIGNER_REVIEW_H
#define ASSENT_SIGNER_REVIEW_H

#include "gateway/signer/types.h"

int decide_may(struct signer *s, const struct who *c, const struct pq_item *it, char *why, size_t n); /* decide.c */
int no_reviewer_warning(struct signer *s, json_t *res); /* decide.c: res NULL: the log */

/* view.c */
void page_add(json_t *arr, json_t *v, size_t *used, size_t *more, size_t max_items);
int reviewer_may_see(struct signer *s, const char *reviewer, const struct req *r);
json_t *list_reply_page(struct signer *s, const char *owner, const char *reviewer, size_t offset);
/* Sets view's "masked" ({spans, chars}) from the marks in its message, context, options
 * and default, unless it has one (a gated call counts its own); marks an agent wrote
 * itself count too, which only ever says more is hidden than is. */
void view_note_masks(json_t *view);
void view_fit(json_t *v, size_t max);
const char *view_risk(const json_t *view);
json_t *show_reply(const struct req *r);
int h_list(void *ctx, struct ipc_frame *f, char *err);

/* decide.c */
int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd);
struct answer decide(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		     uint64_t n);
void expire(struct signer *s);

/* ctl.c: one handler per F_CTL_* frame type */
int h_ctl_whoami(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_status(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_pending(void *ctx, struct ipc_frame *f, char *err);

/* exact.c: the exact call of a view that masks, kept in STATE/exact/ by its digest
 * (written and synced; 0 also when already there); and `assent show --full`. */
int exact_keep(struct signer *s, const uint8_t *call, size_t n, const char *digest, char *err);
/* Show w's reviewer the exact arguments of pending gated call id, once a `reveal` entry
 * naming them is on disk; the answer (or why not) goes to w->reply. */
void reveal(struct signer *s, const struct who *w, const char *id);
int h_ctl_reveal(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_show(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_decide(void *ctx, struct ipc_frame *f, char *err);

/* webpush.c */
void reload_registry(struct signer *s);
int web_session_alive(void *arg, const struct ws_session *ss);
void web_push(struct signer *s, const uint32_t *ended, size_t nended);
void web_sweep(struct signer *s, uint64_t now);
void web_credentials_changed(struct signer *s, const struct registry *old);
void webpush_register(struct signer *s); /* the pages refresh when a request is queued or decided (phase_hook) */

/* web.c */
/* one handler per F_WEB_* frame type */
int h_web_metrics(void *ctx, struct ipc_frame *f, char *err);
int h_web_jwks(void *ctx, struct ipc_frame *f, char *err);
int h_web_checkpoint(void *ctx, struct ipc_frame *f, char *err);
int h_web_login(void *ctx, struct ipc_frame *f, char *err);
int h_web_me(void *ctx, struct ipc_frame *f, char *err);
int h_web_logout(void *ctx, struct ipc_frame *f, char *err);
int h_web_events(void *ctx, struct ipc_frame *f, char *err);
int h_web_pending(void *ctx, struct ipc_frame *f, char *err);
int h_web_list(void *ctx, struct ipc_frame *f, char *err);
int h_web_decide(void *ctx, struct ipc_frame *f, char *err);
int h_web_reveal(void *ctx, struct ipc_frame *f, char *err);
int h_web_submit(void *ctx, struct ipc_frame *f, char *err);
int h_web_admin_clear(void *ctx, struct ipc_frame *f, char *err);
int h_web_qa(void *ctx, struct ipc_frame *f, char *err);
int h_web_history(void *ctx, struct ipc_frame *f, char *err);
int h_web_proof(void *ctx, struct ipc_frame *f, char *err);
int h_web_consistency(void *ctx, struct ipc_frame *f, char *err);
/* webpasskey.c */
int h_web_passkey(void *ctx, struct ipc_frame *f, char *err);

#endif
