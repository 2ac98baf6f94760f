/* `assent qa ...`, `assent events`, `assent event`, `assent calls prune`: the call records'
 * QA reports and events, asked of the daemon over STATE/control.sock (its recorder answers). */
#include "gateway/cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/reccfg.h"

/* A number argument: a JSON integer, or -1 (which the daemon refuses, naming the field). */
static json_t *num(const char *s)
{
	uint64_t v;
	return json_integer(parse_u64(s, &v) == 0 && v <= 1000000000000ull ? (json_int_t)v : -1);
}

static int ask(const char *state, json_t *req, int as_json)
{
	json_t *rep = NULL;
	int rc = ctl_call(state, req, &rep);
	if (rc != 0)
		return rc;
	if (as_json) {
		json_object_del(rep, "ok");
		char *s = json_dumps(rep, JSON_INDENT(2) | JSON_SORT_KEYS);
		puts(s ? s : "{}");
		free(s);
	}
	json_decref(rep);
	return 0;
}

static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

/* The report, then its calls in the order they were made, with their outcomes. */
static void print_report(const json_t *rep)
{
	const json_t *f = json_object_get(rep, "feedback");
	printf("report %lld  %s  [%s]  %s\n", (long long)json_integer_value(json_object_get(f, "id")), str(f, "type"),
	       str(f, "status"), str(f, "created_at"));
	printf("  title: %s\n  from: %s (%s)%s%s\n", str(f, "title"), str(f, "user_sub"), str(f, "caller_kind"),
	       *str(f, "session_id") ? ", session " : "", str(f, "session_id"));
	if (*str(f, "contact"))
		printf("  contact: %s\n", str(f, "contact"));
	printf("  description:\n");
	const char *d = str(f, "description");
	for (const char *p = d; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		printf("    %.*s\n", (int)n, p);
		p += n + (e ? 1 : 0);
	}
	const json_t *calls = json_object_get(rep, "calls");
	printf("  linked calls: %zu\n", json_array_size(calls));
	size_t i;
	const json_t *c;
	json_array_foreach(calls, i, c)
	{
		printf("  %2lld. %s  %-28s %-10s %8.1f ms  (%s)",
		       (long long)json_integer_value(json_object_get(c, "position")), str(c, "started_at"),
		       str(c, "tool"), str(c, "outcome"), json_number_value(json_object_get(c, "duration_ms")),
		       str(c, "rule"));
		if (*str(c, "error_type"))
			printf("\n      %s: %s", str(c, "error_type"), str(c, "error_message"));
		putchar('\n');
	}
}

/* qa stats for people: the totals, then a count per type and per status. */
static void print_stats(const json_t *rep)
{
	static const char *const keys[] = {"what", "n"}, *const th[] = {"TYPE", "REPORTS"},
				 *const sh[] = {"STATUS", "REPORTS"};
	printf("%lld reports, %lld in the last 7 days\n", (long long)json_integer_value(json_object_get(rep, "total")),
	       (long long)json_integer_value(json_object_get(rep, "last_7_days")));
	for (int k = 0; k < 2; k++) {
		json_t *rows = json_array();
		const char *name;
		json_t *v;
		json_object_foreach(json_object_get(rep, k ? "by_status" : "by_type"), name, v)
		{
			json_array_append_new(rows, json_pack("{s:s,s:O}", "what", name, "n", v));
		}
		putchar('\n');
		table_print(rows, keys, k ? sh : th, 2);
		json_decref(rows);
	}
}

static int qa(const char *state, int argc, char **argv)
{
	if (argc < 2)
		return die(2, "usage: assent qa list|stats|show ID|status ID STATUS|delete ID (see assent --help)");
	const char *op = argv[1];
	int as_json = 0;
	json_t *req = json_pack("{s:s}", "cmd", "records");
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			as_json = 1;
	if (!strcmp(op, "list")) {
		json_object_set_new(req, "op", json_string("list"));
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--json"))
				continue;
			if (i + 1 >= argc)
				return json_decref(req), die(2, "%s needs a value", argv[i]);
			if (!strcmp(argv[i], "--type") || !strcmp(argv[i], "--status"))
				json_object_set_new(req, argv[i] + 2, json_string(argv[i + 1]));
			else if (!strcmp(argv[i], "--offset") || !strcmp(argv[i], "--limit"))
				json_object_set_new(req, argv[i] + 2, num(argv[i + 1]));
			else
				return json_decref(req), die(2, "unknown option '%s' for qa list", argv[i]);
			i++;
		}
		if (as_json)
			return ask(state, req, 1);
		json_t *rep = NULL;
		int rc = ctl_call(state, req, &rep);
		if (rc != 0)
			return rc;
		size_t i;
		const json_t *it;
		json_array_foreach(json_object_get(rep, "items"), i, it)
		{
			printf("%6lld  %-11s %-11s %s  %s\n", (long long)json_integer_value(json_object_get(it, "id")),
			       str(it, "type"), str(it, "status"), str(it, "created_at"), str(it, "title"));
		}
		printf("(%lld in all)\n", (long long)json_integer_value(json_object_get(rep, "total")));
		json_decref(rep);
		return 0;
	}
	if (!strcmp(op, "stats")) {
		json_object_set_new(req, "op", json_string("stats"));
		if (as_json)
			return ask(state, req, 1);
		json_t *rep = NULL;
		int rc = ctl_call(state, req, &rep);
		if (rc == 0)
			print_stats(rep);
		json_decref(rep);
		return rc;
	}
	if ((!strcmp(op, "show") || !strcmp(op, "delete")) && argc >= 3) {
		json_object_set_new(req, "op", json_string(op));
		json_object_set_new(req, "id", num(argv[2]));
		if (!strcmp(op, "delete") || as_json)
			return ask(state, req, 1);
		json_t *rep = NULL;
		int rc = ctl_call(state, req, &rep);
		if (rc == 0)
			print_report(rep);
		json_decref(rep);
		return rc;
	}
	if (!strcmp(op, "status") && argc >= 4) {
		json_object_set_new(req, "op", json_string("status"));
		json_object_set_new(req, "id", num(argv[2]));
		json_object_set_new(req, "status", json_string(argv[3]));
		return ask(state, req, 1);
	}
	json_decref(req);
	return die(2, "usage: assent qa list|stats|show ID|status ID STATUS|delete ID (see assent --help)");
}

/* `assent events KEY [--kind K]... [--by WHO] [--limit N] [--json]`: oldest first, each with who
 * recorded it (the principal the daemon measured: agent:NAME, uid:N, assent). */
static int events(const char *state, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return die(2, "usage: assent events KEY [--kind K]... [--by WHO] [--limit N] [--json]");
	json_t *kinds = json_array();
	json_t *req = json_pack("{s:s,s:s,s:s,s:o}", "cmd", "records", "op", "events", "key", argv[1], "kinds", kinds);
	int as_json = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			as_json = 1;
		} else if (!strcmp(argv[i], "--kind") && i + 1 < argc) {
			json_array_append_new(kinds, json_string(argv[++i]));
		} else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
			json_object_set_new(req, "limit", num(argv[++i]));
		} else if (!strcmp(argv[i], "--by") && i + 1 < argc) {
			json_object_set_new(req, "by", json_string(argv[++i]));
		} else {
			json_decref(req);
			return die(2, "unknown option '%s' for events", argv[i]);
		}
	}
	if (as_json)
		return ask(state, req, 1);
	json_t *rep = NULL;
	int rc = ctl_call(state, req, &rep);
	if (rc != 0)
		return rc;
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(rep, "events"), i, e)
	{
		char *attrs = json_dumps(json_object_get(e, "attrs"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		printf("%s  %-24s by %-20s %s%s%s\n", str(e, "occurred_at"), str(e, "kind"),
		       *str(e, "user_sub") ? str(e, "user_sub") : "?", attrs ? attrs : "{}",
		       *str(e, "call_id") ? "  call " : "", str(e, "call_id"));
		free(attrs);
	}
	json_decref(rep);
	return 0;
}

/* `assent event KIND --key K [--attr k=v]...`: values that read as JSON (numbers, true,
 * false, null, quoted strings, objects) are kept as such, anything else is a string. */
static int event(const char *state, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return die(2, "usage: assent event KIND --key K [--attr k=v]...");
	json_t *attrs = json_object();
	json_t *req = json_pack("{s:s,s:s,s:s,s:o}", "cmd", "records", "op", "event", "kind", argv[1], "attrs", attrs);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--key") && i + 1 < argc) {
			json_object_set_new(req, "key", json_string(argv[++i]));
		} else if (!strcmp(argv[i], "--attr") && i + 1 < argc) {
			const char *kv = argv[++i], *eq = strchr(kv, '=');
			if (!eq || eq == kv) {
				json_decref(req);
				return die(2, "--attr %s: expected NAME=VALUE", kv);
			}
			char name[256];
			snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
			json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
			json_object_set_new(attrs, name, v ? v : json_string(eq + 1));
		} else {
			json_decref(req);
			return die(2, "unknown option '%s' for event", argv[i]);
		}
	}
	return ask(state, req, 0) == 0 ? (puts("queued"), 0) : 1;
}

/* `assent calls prune [--older-than D]`: the rows deleted, per table. */
static int calls(const char *state, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "prune"))
		return die(2, "usage: assent calls prune [--older-than D]");
	json_t *req = json_pack("{s:s,s:s}", "cmd", "records", "op", "prune");
	for (int i = 2; i < argc; i++) {
		uint64_t secs;
		if (!strcmp(argv[i], "--older-than") && i + 1 < argc && rec_cfg_duration(argv[i + 1], &secs) == 0 &&
		    secs > 0) {
			json_object_set_new(req, "older", json_integer((json_int_t)secs));
			i++;
		} else {
			json_decref(req);
			return die(2, "--older-than: expected a duration such as 30d, 12h, 90m (not '%s')",
				   i + 1 < argc ? argv[i + 1] : argv[i]);
		}
	}
	json_t *rep = NULL;
	int rc = ctl_call(state, req, &rep);
	if (rc != 0)
		return rc;
	const char *t;
	json_t *n;
	json_object_foreach(json_object_get(rep, "deleted"), t, n)
	{
		printf("%s: %lld\n", t, (long long)json_integer_value(n));
	}
	json_decref(rep);
	return 0;
}

int cmd_records(const char *state, const char *group, int argc, char **argv)
{
	if (!strcmp(group, "qa"))
		return qa(state, argc, argv);
	if (!strcmp(group, "events"))
		return events(state, argc, argv);
	if (!strcmp(group, "event"))
		return event(state, argc, argv);
	return calls(state, argc, argv);
}
