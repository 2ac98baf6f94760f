/* The gate's catalog (gate.c): each upstream's tools, resources, templates and prompts as
 * its worker sent them (canonical CBOR, checked), named NAME__TOOL for agents, and the
 * whole catalog sent to the mcp worker when it changes. */
#define _GNU_SOURCE
#include "gateway/signer/gate_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_TEXT_MAX 8192 /* a tool's description or title, as shown */
#define NAME_MAX_SHOWN 128 /* MCP's bound on a tool name, which NAME__TOOL must keep */

/* ---- the catalog: what agents see ---- */

static void send_catalog(struct signer *s)
{
	struct worker *w = &s->w[W_MCP];
	if (!s->gate.nup || w->fd < 0)
		return;
	json_t *tools = json_array(), *routes = json_array();
	for (size_t i = 0; i < s->gate.nup; i++)
		for (size_t t = 0; t < s->gate.up[i].ntools; t++) {
			const struct up_tool *x = &s->gate.up[i].tools[t];
			json_array_append(tools, x->def);
			json_array_append_new(routes, json_pack("[O,s,s]", json_object_get(x->def, "name"),
								s->gate.up[i].cfg->name, x->name));
		}
	/* Resources keep their URIs: a read goes to the server that listed the URI, else to
	 * the first whose template's literal start the URI has. Prompts are renamed as tools. */
	json_t *more = json_pack("{s:[],s:[],s:[],s:{},s:[],s:{},s:b}", "resources", "resourceTemplates", "prompts",
				 "resource_routes", "template_routes", "prompt_routes", "completions", 0);
	for (size_t i = 0; more && i < s->gate.nup; i++) {
		const struct upw *u = &s->gate.up[i];
		const char *nm = u->cfg->name;
		size_t k;
		json_t *x;
		json_array_foreach(u->resources, k, x)
		{
			const char *uri = json_string_value(json_object_get(x, "uri"));
			if (json_object_get(json_object_get(more, "resource_routes"), uri))
				continue; /* another server listed it first */
			json_array_append(json_object_get(more, "resources"), x);
			json_object_set_new(json_object_get(more, "resource_routes"), uri, json_string(nm));
		}
		json_array_foreach(u->templates, k, x)
		{
			const char *t = json_string_value(json_object_get(x, "uriTemplate"));
			json_array_append(json_object_get(more, "resourceTemplates"), x);
			json_array_append_new(json_object_get(more, "template_routes"),
					      json_pack("[s%,s]", t, strcspn(t, "{"), nm));
		}
		json_array_foreach(u->prompts, k, x)
		{
			json_array_append(json_object_get(more, "prompts"), json_object_get(x, "def"));
			json_object_set_new(json_object_get(more, "prompt_routes"),
					    json_string_value(json_object_get(json_object_get(x, "def"), "name")),
					    json_pack("[s,O]", nm, json_object_get(x, "name")));
		}
		if (u->completions)
			json_object_set_new(more, "completions", json_true());
		if (u->subscribe)
			json_object_set_new(more, "subscribe", json_true());
	}
	char *tj = json_dumps(tools, JSON_COMPACT), *rj = json_dumps(routes, JSON_COMPACT),
	     *mj = more ? json_dumps(more, JSON_COMPACT) : NULL;
	json_decref(tools);
	json_decref(routes);
	json_decref(more);
	struct cv_arena a;
	cv_arena_init(&a, 16);
	if (!tj || !rj || !mj || strlen(tj) + strlen(rj) + strlen(mj) > IPC_FRAME_MAX - 4096)
		slog("error", "gate: the upstreams' tools, resources and prompts do not fit one frame: not served");
	else
		worker_send(s, W_MCP, frame_catalog(&a, tj, rj, mj));
	free(tj);
	free(rj);
	free(mj);
	cv_arena_free(&a);
}

void gate_hello(struct signer *s, int k)
{
	if (k == W_MCP)
		send_catalog(s);
}

static void tools_free(struct upw *u)
{
	for (size_t t = 0; t < u->ntools; t++) {
		json_decref(u->tools[t].def);
		json_decref(u->tools[t].shown);
	}
	free(u->tools);
	u->tools = NULL;
	u->ntools = 0;
	json_decref(u->resources);
	json_decref(u->templates);
	json_decref(u->prompts);
	u->resources = u->templates = u->prompts = NULL;
}

/* Is name served already, by assent itself or another upstream? */
static int name_taken(const struct signer *s, const struct upw *self, const char *name)
{
	static const char *const own[] = {"request_feedback", "get_feedback", "list_pending_feedback",
					  "submit_feedback"};
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (!strcmp(own[i], name))
			return 1;
	for (size_t i = 0; i < s->gate.nup; i++) {
		if (&s->gate.up[i] == self)
			continue;
		for (size_t t = 0; t < s->gate.up[i].ntools; t++)
			if (!strcmp(json_string_value(json_object_get(s->gate.up[i].tools[t].def, "name")), name))
				return 1;
	}
	return 0;
}

static const char *tool_text(const json_t *j, const char *k)
{
	const char *v = json_string_value(json_object_get(j, k));
	return v && strlen(v) <= TOOL_TEXT_MAX ? v : NULL;
}

/* One tool of the server's list, checked and renamed: 0, or why it is left out. */
static const char *tool_take(struct signer *s, struct upw *u, const json_t *j, struct up_tool *out)
{
	const char *name = json_string_value(json_object_get(j, "name"));
	const json_t *in = json_object_get(j, "inputSchema"), *os = json_object_get(j, "outputSchema"),
		     *an = json_object_get(j, "annotations");
	if (!name || !call_tool_name_ok(name, strlen(name)))
		return "its name is not 1 to 128 of [A-Za-z0-9_.-]";
	if (!json_is_object(in))
		return "it has no inputSchema object";
	char exposed[UP_NAME_MAX + 2 + CALL_TOOL_MAX + 1];
	snprintf(exposed, sizeof exposed, "%s%s%s", u->cfg->bare ? "" : u->cfg->name, u->cfg->bare ? "" : UP_SEPARATOR,
		 name);
	if (strlen(exposed) > NAME_MAX_SHOWN)
		return "its name with the server's prefix is over 128 characters";
	if (name_taken(s, u, exposed))
		return "another tool is served under that name";
	for (size_t t = 0; t < u->ntools; t++)
		if (!strcmp(u->tools[t].name, name))
			return "the server lists it twice";
	/* assent can hold any call for a reviewer: a client may make it a task of assent's own */
	json_t *def =
	    json_pack("{s:s,s:O,s:{s:s}}", "name", exposed, "inputSchema", in, "execution", "taskSupport", "optional");
	const char *title = tool_text(j, "title"), *desc = tool_text(j, "description");
	if (title)
		json_object_set_new(def, "title", json_string(title));
	if (desc)
		json_object_set_new(def, "description", json_string(desc));
	if (json_is_object(os))
		json_object_set(def, "outputSchema", (json_t *)os);
	unsigned ann = 0;
	if (json_is_object(an)) {
		json_t *a2 = json_object();
		static const char *const hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
						    "openWorldHint"}; /* POL_ANN_* by bit */
		for (unsigned b = 0; b < 4; b++) {
			const json_t *h = json_object_get(an, hints[b]);
			if (json_is_boolean(h))
				json_object_set(a2, hints[b], (json_t *)h);
			if (json_is_true(h))
				ann |= 1u << b;
		}
		const char *at = tool_text(an, "title");
		if (at)
			json_object_set_new(a2, "title", json_string(at));
		json_object_set_new(def, "annotations", a2);
	}
	*out = (struct up_tool){.ann = ann, .def = def};
	snprintf(out->name, sizeof out->name, "%s", name);
	out->shown = json_pack("{s:s?,s:s?,s:O?}", "title", title, "description", desc, "annotations",
			       json_object_get(def, "annotations"));
	return NULL;
}

/* What an upstream worker sent as canonical CBOR (a catalog list, a result, a notification's
 * params), as JSON, when it is one canonical item of type t; NULL otherwise. */
json_t *gate_cbor_json(const struct cv *b, enum cv_type t, size_t max)
{
	struct cv_arena a;
	cv_arena_init(&a, max);
	struct cv *v;
	char why[AS_ERRLEN];
	json_t *j = cbor_decode(b->s, b->n, &a, &v, why) == 0 && v->t == t ? call_value_json(v) : NULL;
	cv_arena_free(&a);
	if (j && (t == CV_MAP ? !json_is_object(j) : !json_is_array(j))) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* One list of the catalog frame: a canonical CBOR array, as JSON; NULL when absent. */
static int list_of(const struct ipc_frame *f, const char *k, json_t **out, char *err)
{
	const struct cv *b = cv_get(f->body, k);
	*out = NULL;
	if (!b)
		return 0;
	*out = gate_cbor_json(b, CV_ARRAY, PROTO_UP_TOOLS_MAX);
	return *out ? 0 : as_fail(err, AS_ECORRUPT, "F_UP_TOOLS: %s is not a canonical CBOR array", k);
}

/* Only the members agents are shown, each of its type: a server's extra fields stay with it. */
static json_t *pick(const json_t *x, const char *const *keys, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_object_get(x, keys[i]);
		if (json_is_string(v) && json_string_length(v) <= TOOL_TEXT_MAX)
			json_object_set(o, keys[i], (json_t *)v);
		else if ((json_is_object(v) || json_is_array(v) || json_is_integer(v)) && strcmp(keys[i], "name"))
			json_object_set(o, keys[i], (json_t *)v);
	}
	return o;
}

static void other_lists(struct upw *u, const json_t *res, const json_t *tpl, const json_t *pr)
{
	static const char *const rk[] = {"uri", "name", "title", "description", "mimeType", "size", "annotations"};
	static const char *const tk[] = {"uriTemplate", "name", "title", "description", "mimeType", "annotations"};
	static const char *const pk[] = {"name", "title", "description", "arguments"};
	size_t i;
	json_t *x;
	u->resources = json_array();
	u->templates = json_array();
	u->prompts = json_array();
	json_array_foreach(res, i, x)
	{
		const char *uri = json_string_value(json_object_get(x, "uri"));
		if (uri && strlen(uri) <= CALL_URI_MAX && json_is_string(json_object_get(x, "name")))
			json_array_append_new(u->resources, pick(x, rk, sizeof rk / sizeof *rk));
	}
	json_array_foreach(tpl, i, x)
	{
		const char *t = json_string_value(json_object_get(x, "uriTemplate"));
		if (t && strlen(t) <= CALL_URI_MAX && json_is_string(json_object_get(x, "name")))
			json_array_append_new(u->templates, pick(x, tk, sizeof tk / sizeof *tk));
	}
	json_array_foreach(pr, i, x)
	{
		const char *nm = json_string_value(json_object_get(x, "name"));
		char exposed[UP_NAME_MAX + 2 + CALL_TOOL_MAX + 1];
		if (!nm || !call_tool_name_ok(nm, strlen(nm)))
			continue;
		snprintf(exposed, sizeof exposed, "%s%s%s", u->cfg->bare ? "" : u->cfg->name,
			 u->cfg->bare ? "" : UP_SEPARATOR, nm);
		json_t *def = pick(x, pk, sizeof pk / sizeof *pk);
		json_object_set_new(def, "name", json_string(exposed));
		json_array_append_new(u->prompts, json_pack("{s:o,s:s}", "def", def, "name", nm));
	}
}

int h_up_tools(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct upw *u = upw_of(s, s->cur);
	json_t *list = NULL, *res = NULL, *tpl = NULL, *pr = NULL;
	int rc = list_of(f, "tools", &list, err);
	if (rc == 0)
		rc = list_of(f, "resources", &res, err);
	if (rc == 0)
		rc = list_of(f, "templates", &tpl, err);
	if (rc == 0)
		rc = list_of(f, "prompts", &pr, err);
	if (rc != 0 || !u || !list) {
		json_decref(list);
		json_decref(res);
		json_decref(tpl);
		json_decref(pr);
		return rc ? rc : as_fail(err, AS_ECORRUPT, "F_UP_TOOLS: not from an upstream worker");
	}
	tools_free(u);
	other_lists(u, res, tpl, pr);
	u->completions = cv_get(f->body, "completions") && cv_get(f->body, "completions")->t == CV_TRUE;
	u->subscribe = cv_get(f->body, "subscribe") && cv_get(f->body, "subscribe")->t == CV_TRUE;
	json_decref(res);
	json_decref(tpl);
	json_decref(pr);
	u->tools = calloc(json_array_size(list) + 1, sizeof *u->tools);
	size_t i, left = 0;
	json_t *x;
	json_array_foreach(list, i, x)
	{
		const char *why = u->tools ? tool_take(s, u, x, &u->tools[u->ntools]) : "out of memory";
		if (!why) {
			u->ntools++;
			continue;
		}
		const char *nm = json_string_value(json_object_get(x, "name"));
		char shown[64];
		snprintf(shown, sizeof shown, "%s", nm ? nm : "(no name)");
		for (char *p = shown; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		if (++left <= 20)
			slog("warning", "upstream %s: tool \"%s\" is not served: %s", u->cfg->name, shown, why);
	}
	json_decref(list);
	u->ready = 1;
	s->w[s->cur].restarts = 0; /* its server runs and answered: the backoff starts over */
	slog("info", "upstream %s: %zu tools served%s", u->cfg->name, u->ntools,
	     left ? " (some left out: see above)" : "");
	send_catalog(s);
	return 0;
}

void gate_free(struct signer *s)
{
	for (size_t i = 0; i < s->gate.nup; i++)
		tools_free(&s->gate.up[i]);
	free(s->gate.gcalls);
	free(s->gate.asks);
	s->gate.gcalls = NULL;
	s->gate.asks = NULL;
	s->gate.nup = 0;
	upstreams_free(s->gate.ups);
	s->gate.ups = NULL;
}
