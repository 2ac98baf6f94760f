/* Proofs over the ledger, from the reviewer listener: a decision's inclusion proof for the
 * reviewer who may see it, and (when the operator turns them on) consistency proofs for
 * witnesses. Both read the ledger in the event loop. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/web_int.h"
#include "gateway/signer/webhist.h"
#include "verify/consist.h"
#include "verify/proof.h"

#include <stdio.h>
#include <string.h>

struct proof_arg {
	uint64_t seq;
	struct buf out;
};

static int proof_read(MDB_txn *txn, MDB_dbi entries, MDB_dbi ckpts, struct eckey *key, void *arg, char *err)
{
	struct proof_arg *p = arg;
	/* size 0: the newest signed tree, which each commit's head checkpoint covers */
	return proof_make_txn(txn, entries, ckpts, p->seq, 0, &key, 1, &p->out, err);
}

/* The inclusion proof of a decision in this reviewer's history, as `assent-verify proof`
 * makes it (verify/proof.h), checked by `assent-verify proof --check`. Only a decision the
 * reviewer may see: the entry holds the request's response and names. It reads the whole
 * ledger (every leaf up to the newest checkpoint, each checked), in the event loop: a cost
 * linear in the ledger's size (0.27 s per 100,000 entries measured here), paid only when a
 * reviewer asks (gateway/web/README.md). */
int h_web_proof(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	struct proof_arg p;
	GUARD(ipc_get_uint(f->body, "seq", PROTO_SEQ_MAX, &p.seq, err));
	if (!web_reviewer_ok(s, &q, 0))
		return 0;
	const struct recent *x = NULL;
	for (size_t i = 0; (x = history_nth(s, i)) && !(x->seq == p.seq && webhist_may_see(s, q.reviewer, x)); i++)
		;
	if (!x) {
		web_error(s, q.hreq, PS_NOT_FOUND,
			  "no decision with ledger sequence number %llu in your history (the last %d decisions): "
			  "assent-verify proof STATE/ledger %llu makes any entry's proof",
			  (unsigned long long)p.seq, HISTORY_MAX, (unsigned long long)p.seq);
		return 0;
	}
	char perr[AS_ERRLEN];
	buf_init(&p.out, PROOF_MAX);
	int rc = ledger_read(s->ledger, proof_read, &p, perr);
	if (rc != 0) {
		slog("error", "web: the proof of entry %llu: %s", (unsigned long long)p.seq, perr);
		web_error(s, q.hreq, PS_UNAVAILABLE, "cannot make the proof of entry %llu: %s",
			  (unsigned long long)p.seq, perr);
	} else {
		struct web_out w = {
		    .status = PS_OK, .ctype = "application/json", .text = (const char *)p.out.p, .textn = p.out.len};
		web_send(s, q.hreq, &w, NULL);
	}
	buf_free(&p.out);
	return 0;
}

/* GET /checkpoint/consistency?old=M&new=N: open like /checkpoint (hashes only), for witnesses.
 * It reads the ledger's tiles in the event loop (about 6 ms at 100,000 entries; a ledger from
 * before tiles reads its entries: 0.2 s a 100,000); the worker rate-limits it.
 * The worker checked 1 <= old <= new: a frame that breaks it is the worker's fault. */
int h_web_consistency(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	struct consist_req c;
	char perr[AS_ERRLEN];
	GUARD(web_begin(s, f, &q, err));
	GUARD(ipc_get_uint(f->body, "old", PROTO_SEQ_MAX + 1, &c.old, err));
	GUARD(ipc_get_uint(f->body, "new", PROTO_SEQ_MAX + 1, &c.new, err));
	if (c.old == 0 || c.old > c.new)
		return as_fail(err, AS_ECORRUPT, "consistency sizes %llu to %llu", (unsigned long long)c.old,
			       (unsigned long long)c.new);
	if (!s->consistency_proofs) {
		web_error(s, q.hreq, PS_NOT_FOUND,
			  "consistency proofs are not served here (the operator turns them on with "
			  "ASSENT_CONSISTENCY_PROOFS=on: docs/audit.md)");
		return 0;
	}
	buf_init(&c.out, CONSIST_TEXT_MAX);
	int rc = ledger_read(s->ledger, consist_make_cb, &c, perr);
	struct web_out w = {.status = PS_OK, .ctype = "text/plain; charset=utf-8", .text = "", .textn = c.out.len};
	if (rc == 0 && c.out.len)
		w.text = (const char *)c.out.p;
	if (rc == 0)
		web_send(s, q.hreq, &w, NULL);
	else /* sizes past the signed tree, or none signed yet: 404; a damaged ledger: 503 */
		web_error(s, q.hreq, rc == AS_EINVAL || rc == AS_ENOTFOUND ? PS_NOT_FOUND : PS_UNAVAILABLE, "%s", perr);
	buf_free(&c.out);
	return 0;
}
