/* Usage insights (FEEDBACK_INSIGHTS_ENABLED, the feedback tools' analytics of the seed): off
 * unless asked for; when on, each use of a QA tool is counted by tool and channel, and each
 * report submitted leaves an event with its metadata alone (type, lengths, whether a contact
 * was given): never a title, description or contact. Counts are in /metrics, events under the
 * key "insights" (assent events insights). */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The QA operations (qa.c's op names) and the seed's name for the tool each one is. */
static const char *const OPS[INSIGHTS_OPS][2] = {
    {"submit", "submit_feedback"}, {"event", "record_event"},
    {"list", "list_feedback"},	   {"stats", "get_feedback_statistics"},
    {"show", "get_feedback"},	   {"status", "update_feedback_status"},
    {"delete", "delete_feedback"}, {"prune", "prune"},
    {"events", "list_events"},	   {"link", "link_feedback"},
};
static const char *const TYPES[INSIGHTS_TYPES] = {"bug", "feature", "improvement", "question", "other"};

int insights_start(struct signer *s)
{
	const char *v = getenv("FEEDBACK_INSIGHTS_ENABLED");
	s->recs.insights = 0;
	if (!v || !*v || !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
		return 0;
	if (strcasecmp(v, "true") && strcmp(v, "1") && strcasecmp(v, "yes")) {
		slog("error", "FEEDBACK_INSIGHTS_ENABLED: expected true or false, got '%.16s'", v);
		return 2;
	}
	s->recs.insights = 1;
	if (!s->recs.cfg || s->recs.cfg->mode == REC_OFF)
		slog("warning", "FEEDBACK_INSIGHTS_ENABLED=true with the call records off "
				"(FEEDBACK_INSTRUMENTATION_MODE=off): QA tool usage is counted in /metrics only; "
				"no insights event can be recorded");
	else
		slog("info", "usage insights on (FEEDBACK_INSIGHTS_ENABLED): QA tool use and report metadata "
			     "(type, lengths, contact given), never their text, in /metrics and events keyed insights");
	return 0;
}

static size_t text_len(const struct ipc_frame *f, const char *k)
{
	const struct cv *v = cv_get(f->body, k);
	return v && v->t == CV_TEXT ? v->n : 0;
}

void insights_use(struct signer *s, const char *channel, const char *op, const struct ipc_frame *f)
{
	if (!s->recs.insights)
		return;
	size_t i = 0;
	while (i < INSIGHTS_OPS && strcmp(OPS[i][0], op))
		i++;
	if (i == INSIGHTS_OPS)
		return;
	s->recs.ins_uses[i]++;
	rec_event(s, "assent.insights.tool", "insights", json_pack("{s:s,s:s}", "tool", OPS[i][1], "channel", channel));
	if (strcmp(op, "submit"))
		return;
	char type[16] = "";
	const struct cv *t = cv_get(f->body, "type");
	if (t && t->t == CV_TEXT)
		snprintf(type, sizeof type, "%.*s", (int)(t->n < 15 ? t->n : 15), (const char *)t->s);
	size_t k = 0;
	while (k + 1 < INSIGHTS_TYPES && strcmp(TYPES[k], type))
		k++;
	s->recs.ins_subs[k]++;
	rec_event(s, "assent.insights.submission", "insights",
		  json_pack("{s:s,s:I,s:I,s:b,s:s}", "type", TYPES[k], "title_length", (json_int_t)text_len(f, "title"),
			    "description_length", (json_int_t)text_len(f, "description"), "contact_given",
			    text_len(f, "contact") > 0, "channel", channel));
}

int insights_metrics(const struct signer *s, struct buf *o)
{
	int rc = buf_printf(o,
			    "# HELP assent_insights_enabled FEEDBACK_INSIGHTS_ENABLED.\n"
			    "# TYPE assent_insights_enabled gauge\nassent_insights_enabled %d\n",
			    s->recs.insights);
	if (rc || !s->recs.insights)
		return rc;
	rc = buf_printf(o, "# HELP assent_insights_tool_uses_total Uses of the QA tools, by tool.\n"
			   "# TYPE assent_insights_tool_uses_total counter\n");
	for (size_t i = 0; !rc && i < INSIGHTS_OPS; i++)
		rc = buf_printf(o, "assent_insights_tool_uses_total{tool=\"%s\"} %llu\n", OPS[i][1],
				(unsigned long long)s->recs.ins_uses[i]);
	rc = rc || buf_printf(o, "# HELP assent_insights_submissions_total QA reports submitted, by type.\n"
				 "# TYPE assent_insights_submissions_total counter\n");
	for (size_t k = 0; !rc && k < INSIGHTS_TYPES; k++)
		rc = buf_printf(o, "assent_insights_submissions_total{type=\"%s\"} %llu\n", TYPES[k],
				(unsigned long long)s->recs.ins_subs[k]);
	return rc;
}
