/* What the core tells the capabilities that registered for it: the call records' events and
 * notes (records.c and qa.c register them when the records start; with none registered, as
 * when the records are off, nothing is recorded), and a request's phases (queued, decided),
 * which the webhooks register for (notify.c). The capabilities that make these happen (the
 * requests, the gate, the decisions) call here, never the records or the webhooks. */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

void rec_hooks(struct signer *s, const struct rec_hooks *h)
{
	s->rech = h;
}

void rec_event_sink(struct signer *s, rec_event_fn fn)
{
	s->rec_sink = fn;
}

void rec_event(struct signer *s, const char *kind, const char *key, json_t *attrs)
{
	rec_event_in(s, kind, key, NULL, attrs);
}

void rec_event_in(struct signer *s, const char *kind, const char *key, const char *call, json_t *attrs)
{
	if (s->rec_sink)
		s->rec_sink(s, kind, key, call, attrs);
	else
		json_decref(attrs);
}

void rec_note(struct signer *s, uint64_t conn, const char *rid, const char *decision, unsigned rule, uint64_t seq)
{
	if (s->rech && s->rech->note)
		s->rech->note(s, conn, rid, decision, rule, seq);
}

void rec_note_waiting(struct signer *s, uint64_t conn, const char *rid)
{
	if (s->rech && s->rech->waiting)
		s->rech->waiting(s, conn, rid);
}

const char *rec_call_id(const struct signer *s, uint64_t conn, const char *rid)
{
	return s->rech && s->rech->call_id ? s->rech->call_id(s, conn, rid) : NULL;
}

void finish_hook(struct signer *s, finish_fn fn)
{
	s->gate_finish = fn;
}

void phase_hook(struct signer *s, enum req_phase ph, phase_fn fn)
{
	if (s->nphase[ph] < PHASE_HOOKS_MAX)
		s->phase[ph][s->nphase[ph]++] = fn;
	else /* a programming error, caught by the first start of a build that makes it */
		slog("error", "phase %d: more than %d hooks; one is not run", (int)ph, PHASE_HOOKS_MAX);
}

void phase_run(struct signer *s, enum req_phase ph, const struct phase_ev *e)
{
	for (size_t i = 0; i < s->nphase[ph]; i++)
		s->phase[ph][i](s, ph, e);
}
