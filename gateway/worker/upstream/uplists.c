/* The upstream worker's catalog (worker_upstream.c): the server's tools, resources, resource
 * templates and prompts, gathered page by page, one list after another, and sent to the
 * signer as one F_UP_TOOLS frame. Bounded: UP_PAGES_MAX pages, UP_TOOLS_MAX tools. */
#define _GNU_SOURCE
#include "gateway/worker/upstream/upw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/call.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"

static const struct {
	const char *method, *key, *field; /* the list's method, its result's array, the frame's field */
} lists[4] = {{"tools/list", "tools", "tools"},
	      {"resources/list", "resources", "resources"},
	      {"resources/templates/list", "resourceTemplates", "templates"},
	      {"prompts/list", "prompts", "prompts"}};

static void list_next(struct uw *w, const json_t *cursor)
{
	char id[40];
	snprintf(id, sizeof id, "assent-list-%u-%u", w->list_seq, w->phase);
	json_t *p = json_object();
	if (cursor)
		json_object_set(p, "cursor", (json_t *)cursor);
	int rc = to_server(w, json_pack("{s:s,s:s,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method",
					lists[w->phase].method, "params", p));
	(void)rc; /* a server that does not read is logged; its list never comes */
}

void list_start(struct uw *w)
{
	for (int i = 0; i < 4; i++) {
		json_decref(w->lists[i]);
		w->lists[i] = NULL;
	}
	w->list_seq++;
	w->phase = 0;
	w->pages = 0;
	list_next(w, NULL);
}

/* Every list is in: the catalog to the signer, each list as canonical CBOR. */
static void lists_done(struct uw *w)
{
	char err[AS_ERRLEN];
	cv_arena_reset(&w->arena);
	struct cv *f = ipc_frame_new(&w->arena, F_UP_TOOLS, 7);
	struct buf enc[4];
	int rc = f ? 0 : AS_ENOMEM;
	for (int i = 0; i < 4; i++) {
		buf_init(&enc[i], PROTO_UP_TOOLS_MAX);
		if (!w->lists[i] && i)
			continue; /* the server has none */
		if (!w->lists[i])
			w->lists[i] = json_array();
		if (call_value_encode(w->lists[i], PROTO_UP_TOOLS_MAX, &enc[i], err) != 0) {
			misbehaved(w, "its %s: %s; none is served", lists[i].key, err);
			json_array_clear(w->lists[i]);
			buf_reset(&enc[i]);
			int er = call_value_encode(w->lists[i], PROTO_UP_TOOLS_MAX, &enc[i], err);
			(void)er; /* an empty array always encodes */
		}
		if (rc == 0)
			rc = ipc_put_bytes(&w->arena, f, lists[i].field, enc[i].p, enc[i].len);
	}
	if (rc == 0 && w->completions)
		rc = ipc_put_bool(&w->arena, f, "completions", 1);
	if (rc == 0 && w->subscribe)
		rc = ipc_put_bool(&w->arena, f, "subscribe", 1);
	if (rc == 0)
		send_frame(w, f);
	for (int i = 0; i < 4; i++)
		buf_free(&enc[i]);
}

/* The next list the server has, or the catalog when none is left. */
static void phase_next(struct uw *w)
{
	while (++w->phase < 4 && !w->has[w->phase])
		;
	w->pages = 0;
	if (w->phase < 4)
		list_next(w, NULL);
	else
		lists_done(w);
}

/* A page of the list of this phase: gathered until the last. */
void on_list(struct uw *w, const json_t *res)
{
	unsigned ph = w->phase;
	const json_t *t = json_object_get(res, lists[ph].key), *next = json_object_get(res, "nextCursor"), *x;
	size_t i;
	if (!w->lists[ph])
		w->lists[ph] = json_array();
	if (!json_is_array(t))
		misbehaved(w, "%s: its result has no %s array", lists[ph].method, lists[ph].key);
	json_array_foreach(t, i, x)
	{
		if (json_array_size(w->lists[ph]) >= UP_TOOLS_MAX) {
			misbehaved(w, "more than %u %s: the rest are not served", UP_TOOLS_MAX, lists[ph].key);
			next = NULL;
			break;
		}
		json_array_append(w->lists[ph], (json_t *)x);
	}
	if (json_is_string(next) && ++w->pages < UP_PAGES_MAX) {
		list_next(w, next);
		return;
	}
	phase_next(w);
}

void list_failed(struct uw *w)
{
	misbehaved(w, "%s failed: none is served", lists[w->phase].method);
	phase_next(w);
}
