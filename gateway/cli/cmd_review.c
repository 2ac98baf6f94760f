/* A reviewer's commands over STATE/control.sock: pending, show, approve, reject, answer, select, review. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"

#include <getopt.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdarg.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- reviewer commands over STATE/control.sock ---- */

int ctl_connect(const char *state, char *path, size_t n)
{
	snprintf(path, n, "%s/" STATE_CONTROL_SOCK, state);
	return unix_connect(path);
}

int ctl_call(const char *state, json_t *req, json_t **rep)
{
	char path[4200];
	int fd = ctl_connect(state, path, sizeof path);
	if (fd < 0) {
		int e = errno;
		json_decref(req);
		if (e == ENAMETOOLONG)
			return die(2, "state directory path too long");
		/* A daemon that runs but is not this user's to reach is not a daemon that is down. */
		if (e == EACCES || e == EPERM)
			return die(
			    2,
			    "permission denied on %s: uid %u may not reach this daemon (the operator gives reviewers "
			    "a group: ASSENT_CONTROL_GROUP=GROUP, see assentd(8))",
			    path, (unsigned)getuid());
		if (e != ENOENT && e != ECONNREFUSED)
			return die(2, "cannot reach the daemon on %s: %s", path, strerror(e));
		return die(2, "no daemon answers on %s (start it with: assentd --state %s)", path, state);
	}
	char *line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	FILE *f = fdopen(fd, "r+");
	if (!f || !line || fprintf(f, "%s\n", line) < 0 || fflush(f) != 0) {
		free(line);
		if (f)
			fclose(f);
		return die(2, "cannot talk to the daemon: %s", strerror(errno));
	}
	free(line);
	char *resp = NULL;
	size_t cap = 0;
	ssize_t n = getline(&resp, &cap, f);
	fclose(f);
	json_error_t je;
	*rep = n > 0 ? json_loads(resp, 0, &je) : NULL;
	free(resp);
	if (!*rep)
		return die(2, "the daemon closed the connection without an answer");
	if (!json_is_true(json_object_get(*rep, "ok"))) {
		int rc = die(1, "%s", json_string_value(json_object_get(*rep, "error")) ?: "refused");
		json_decref(*rep);
		*rep = NULL;
		return rc;
	}
	return 0;
}

/* What an agent wrote, as a reviewer's terminal may show it: control, bidirectional
 * and invisible characters written as a marked \uXXXX (text.h), so no escape
 * sequence drives the terminal and no text is shown reordered or hidden. shown_marked
 * counts them for the note print_request ends with. */
static size_t shown_marked;

static void show_text(const char *s, size_t n, int keep_lines)
{
	struct buf b;
	int tty = isatty(STDOUT_FILENO);
	buf_init(&b, 16 * n + 64); /* a byte becomes at most 15: \u001b between the two marks */
	if (s && text_neutralise(s, n, keep_lines, tty ? "\033[7m" : "", tty ? "\033[27m" : "", &b, &shown_marked) == 0)
		fwrite(b.p, 1, b.len, stdout);
	buf_free(&b);
}

static void show_str(const char *s, int keep_lines)
{
	show_text(s ? s : "?", s ? strlen(s) : 1, keep_lines);
}

/* A context dumped as JSON: jansson wrote its control characters as escapes (\u001b,
 * \r, \b, \f), visible but easy to miss, so they are marked and counted like the rest;
 * everything else goes through the neutraliser. */
static void show_json(const char *js)
{
	int tty = isatty(STDOUT_FILENO);
	size_t n = strlen(js), start = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (js[i] != '\\')
			continue;
		char e = js[i + 1];
		size_t len = e == 'u' ? 6 : 2;
		int ctl = e == 'b' || e == 'f' || e == 'r' ||
			  (e == 'u' && i + 5 < n && js[i + 2] == '0' && js[i + 3] == '0' &&
			   (js[i + 4] == '0' || js[i + 4] == '1'));
		if (ctl) {
			show_text(js + start, i - start, 1);
			printf("%s%.*s%s", tty ? "\033[7m" : "", (int)len, js + i, tty ? "\033[27m" : "");
			shown_marked++;
			start = i + len;
		}
		i += len - 1; /* past the escape, so that \\u001b stays the text it is */
	}
	show_text(js + start, n - start, 1);
}

/* A unified diff: a hunk header and a file header, or git's "diff --git" first line. */
static int is_diff(const char *s, size_t n)
{
	int hunk = 0, head = !strncmp(s, "diff --git ", n < 11 ? n : 11);
	for (size_t i = 0; i < n; i++) {
		if (i && s[i - 1] != '\n')
			continue;
		if (n - i >= 3 && !memcmp(s + i, "@@ ", 3))
			hunk = 1;
		else if (n - i >= 4 && (!memcmp(s + i, "--- ", 4) || !memcmp(s + i, "+++ ", 4)))
			head = 1;
	}
	return hunk && head;
}

/* Multi-line text as a block of its own lines, neutralised line by line; a unified diff
 * coloured when stdout is a terminal (added green, removed red, hunks cyan, headers bold).
 * The colours are ours, around neutralised text: the agent's bytes drive nothing. */
static void show_block(const char *s, size_t n)
{
	int colour = isatty(STDOUT_FILENO) && is_diff(s, n);
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (s + i)) : n - i;
		const char *l = s + i, *c = "";
		if (colour && len >= 3 && (!memcmp(l, "+++", 3) || !memcmp(l, "---", 3)))
			c = "\033[1m";
		else if (colour && len >= 4 && !memcmp(l, "diff", 4))
			c = "\033[1m";
		else if (colour && len >= 2 && !memcmp(l, "@@", 2))
			c = "\033[36m";
		else if (colour && len && *l == '+')
			c = "\033[32m";
		else if (colour && len && *l == '-')
			c = "\033[31m";
		fputs(c, stdout);
		show_text(l, len, 1);
		printf("%s\n", *c ? "\033[0m" : "");
		i += len + 1;
	}
}

#define BLOCKS_MAX 64
#define BLOCK_DEPTH_MAX 32

struct blocks {
	size_t n;
	char *path[BLOCKS_MAX];
	json_t *text[BLOCKS_MAX];
};

/* Every multi-line string of v (a copy) is taken out into b, with its path, and replaced
 * by a note naming the block it is shown in: JSON escapes \n, so SQL or a plan would
 * otherwise be one long line. */
static void take_blocks(json_t *v, const char *path, int depth, int replace, struct blocks *b)
{
	if (depth > BLOCK_DEPTH_MAX)
		return;
	const char *k;
	json_t *x;
	size_t i;
	char sub[512];
	if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
			take_blocks(x, sub, depth + 1, replace, b);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			snprintf(sub, sizeof sub, "%s%s%zu", path, *path ? "." : "", i);
			take_blocks(x, sub, depth + 1, replace, b);
		}
	} else if (json_is_string(v) && memchr(json_string_value(v), '\n', json_string_length(v)) &&
		   b->n < BLOCKS_MAX) {
		size_t lines = 1;
		for (const char *q = json_string_value(v); *q; q++)
			lines += *q == '\n' && q[1];
		char note[600];
		snprintf(note, sizeof note, "(%zu lines: shown below as %s)", lines, path);
		b->path[b->n] = strdup(path);
		b->text[b->n] = json_copy(v);
		if (b->path[b->n] && b->text[b->n] && (!replace || json_string_set(v, note) == 0))
			b->n++;
		else {
			free(b->path[b->n]);
			json_decref(b->text[b->n]);
		}
	}
}

/* A JSON value as indented JSON, its multi-line strings as blocks after it. A gated call's
 * arguments (root "") are the exact call and keep their strings in the JSON too; a
 * context's are replaced there by a note naming their block. */
static void show_json_blocks(const json_t *v, const char *root)
{
	json_t *c = json_deep_copy(v);
	struct blocks b = {0};
	take_blocks(c, root, 0, *root != 0, &b);
	char *js = c ? json_dumps(c, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
	if (js)
		show_json(js);
	printf("\n");
	free(js);
	json_decref(c);
	for (size_t i = 0; i < b.n; i++) {
		printf("---- ");
		show_str(b.path[i], 0);
		printf(" ----\n");
		show_block(json_string_value(b.text[i]), json_string_length(b.text[i]));
		printf("----\n");
		free(b.path[i]);
		json_decref(b.text[i]);
	}
}

/* A uid with this machine's name for it, "uid 1000 (alice)": the name is the system's,
 * not the agent's word. */
static void uid_name(long long uid, char *out, size_t n)
{
	const struct passwd *pw = uid >= 0 && uid <= UINT32_MAX ? getpwuid((uid_t)uid) : NULL;
	int plain = pw && pw->pw_name && *pw->pw_name && strlen(pw->pw_name) < 64;
	for (const char *q = plain ? pw->pw_name : ""; *q; q++)
		plain &= (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
			 *q == '.' || *q == '_' || *q == '-';
	if (plain)
		snprintf(out, n, "uid %lld (%s)", uid, pw->pw_name);
	else
		snprintf(out, n, "uid %lld", uid);
}

/* Who asked, as the signer recorded it: the agent by its key's or registration's name and
 * the measured uid, an anonymous client, or a uid no agent is registered for. */
static void show_requester(const json_t *rq)
{
	const json_t *uid = json_object_get(rq, "uid");
	const char *agent = json_string_value(json_object_get(rq, "agent"));
	char who[128] = "";
	if (json_is_integer(uid))
		uid_name(json_integer_value(uid), who, sizeof who);
	/* HTTP agents on loopback carry the uid measured on their connection as well. */
	char measured[160] = "";
	if (*who && (agent || json_is_true(json_object_get(rq, "anonymous"))))
		/* HTTP on loopback, or a stdio agent registered by uid */
		snprintf(measured, sizeof measured, ", %s measured", who);
	if (agent) {
		printf("from     agent ");
		show_str(agent, 0);
		printf(" (by %s)%s, client ",
		       json_is_string(json_object_get(rq, "agent_by")) ? "its registered uid" : "its API key",
		       measured);
	} else if (json_is_true(json_object_get(rq, "anonymous")))
		printf("from     an anonymous HTTP client%s, client ", measured);
	else if (*who)
		printf("from     %s, measured on its socket; no agent is registered for it (assent agent add NAME "
		       "--uid %lld names it), client ",
		       who, (long long)json_integer_value(uid));
	else
		printf("from     (not recorded), client ");
	show_str(json_string_value(json_object_get(rq, "client")), 0);
	printf(" (declared)\n");
}

#define SHOW_TEXT_MAX (16u << 10)

#define SHOW_HEX_MAX 256u

/* A subject's bytes as the agent sent them: text when it is UTF-8 (control
 * characters replaced: they could drive the terminal), else a hex dump; long
 * content is cut, and --json has all of it. */
static void print_content(const json_t *o)
{
	const char *b = json_string_value(json_object_get(o, "content_base64"));
	if (!b) {
		if (json_object_get(o, "content_omitted"))
			printf("         (its bytes are too large to show with the rest of the request)\n");
		return;
	}
	size_t n = strlen(b), len = 0;
	uint8_t *p = malloc(n / 4 * 3 + 3);
	if (!p || b64_decode(b, n, p, n / 4 * 3 + 3, &len) != 0) {
		printf("         (its bytes could not be decoded)\n");
		free(p);
		return;
	}
	int text = utf8_valid(p, len) && !memchr(p, 0, len);
	size_t show = len > (text ? SHOW_TEXT_MAX : SHOW_HEX_MAX) ? (text ? SHOW_TEXT_MAX : SHOW_HEX_MAX) : len;
	if (text) {
		while (show < len && show > 0 && (p[show] & 0xC0) == 0x80)
			show--;
		printf("---- %zu bytes of text ----\n", len);
		show_block((const char *)p, show && p[show - 1] == '\n' ? show - 1 : show);
	} else {
		printf("---- %zu bytes, binary ----\n", len);
		for (size_t k = 0; k < show; k += 16) {
			printf("%08zx ", k);
			for (size_t j = k; j < k + 16 && j < show; j++)
				printf(" %02x", p[j]);
			putchar('\n');
		}
	}
	if (show < len)
		printf("---- %zu more bytes not shown: `assent show ID --json` has them all ----\n", len - show);
	else
		printf("----\n");
	free(p);
}

/* A file edit's {oldText, newText} pairs (the filesystem servers' edit_file, "edits"), again
 * as a unified diff of those texts, after the arguments it is drawn from: a reviewer reads a
 * change as a change. Nothing when any edit is not such a pair. */
static void print_edits(const json_t *args)
{
	const json_t *edits = json_object_get(args, "edits"), *e;
	const char *path = json_string_value(json_object_get(args, "path"));
	size_t i;
	if (!json_is_array(edits) || json_array_size(edits) == 0)
		return;
	json_array_foreach(edits, i, e)
	{
		if (!json_is_string(json_object_get(e, "oldText")) || !json_is_string(json_object_get(e, "newText")))
			return;
	}
	struct buf d;
	buf_init(&d, 1u << 20);
	int rc = buf_printf(&d, "--- %s (now)\n+++ %s (after the call)\n", path ? path : "?", path ? path : "?");
	json_array_foreach(edits, i, e)
	{
		rc |= buf_printf(&d, "@@ edit %zu of %zu @@\n", i + 1, json_array_size(edits));
		for (int side = 0; side < 2; side++) {
			const char *t = json_string_value(json_object_get(e, side ? "newText" : "oldText"));
			for (const char *p = t, *nl; rc == 0 && p; p = nl ? nl + 1 : NULL) {
				nl = strchr(p, '\n');
				rc |= buf_printf(&d, "%c%.*s\n", side ? '+' : '-', (int)(nl ? nl - p : (long)strlen(p)),
						 p);
			}
		}
	}
	if (rc == 0) {
		printf("edits, as a diff of the arguments above:\n");
		show_block((const char *)d.p, d.len);
	}
	buf_free(&d);
}

/* A gated call (the gate): the upstream and its tool as the server describes it, the
 * rule that holds it, the digest of the exact call, and the arguments (secrets redacted)
 * as indented JSON, each multi-line string again as a block of its own lines. */
static void print_call(const json_t *r)
{
	const json_t *ti = json_object_get(r, "tool_info"), *an = json_object_get(ti, "annotations"),
		     *pol = json_object_get(r, "policy"), *args = json_object_get(r, "arguments");
	printf("\nupstream ");
	show_str(json_string_value(json_object_get(r, "upstream")), 0);
	printf("\ntool     ");
	show_str(json_string_value(json_object_get(r, "tool")), 0);
	if (json_string_value(json_object_get(ti, "title"))) {
		printf(" (");
		show_str(json_string_value(json_object_get(ti, "title")), 0);
		printf(")");
	}
	printf("\n");
	if (json_string_value(json_object_get(ti, "description"))) {
		printf("         ");
		show_str(json_string_value(json_object_get(ti, "description")), 0);
		printf("\n");
	}
	const char *k;
	json_t *v;
	int any = 0;
	json_object_foreach((json_t *)an, k, v)
	{
		if (!json_is_true(v))
			continue;
		printf("%s", any++ ? ", " : "hints    ");
		show_str(k, 0);
	}
	if (any)
		printf(" (declared by the server, not verified)\n");
	if (pol)
		printf("rule     line %lld of the policy\n",
		       (long long)json_integer_value(json_object_get(pol, "rule")));
	printf("call     ");
	show_str(json_string_value(json_object_get(r, "call")), 0);
	printf(" (the exact call; secrets below are redacted)\narguments:\n");
	show_json_blocks(args, "");
	if (json_object_get(r, "input")) { /* a retry's answers run with it (MCP 2026-07-28) */
		printf("input (the client's answers to the server's questions):\n");
		show_json_blocks(json_object_get(r, "input"), "");
	}
	print_edits(args);
}

/* forward: print_request is below */
static void print_request(const json_t *r);

/* `assent show ID --full`: the view, then the exact arguments the daemon holds, asked for
 * as a reveal (a ledger entry names who looked, on disk before the answer). rep: the
 * view, taken. */
static int show_full(const char *state, const char *id, json_t *rep, int json)
{
	json_t *exact;
	int rc = ctl_call(state, json_pack("{s:s,s:s}", "cmd", "reveal", "session_id", id), &exact);
	if (rc != 0) {
		json_decref(rep);
		return rc;
	}
	if (json) {
		json_t *both = json_pack("{s:O,s:O}", "request", json_object_get(rep, "request"), "exact", exact);
		char *s = json_dumps(both, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		printf("%s\n", s ? s : "null");
		free(s);
		json_decref(both);
	} else {
		print_request(json_object_get(rep, "request"));
		printf("\nexact arguments, as they will run (revealed to you; ledger entry %lld):\n",
		       (long long)json_integer_value(json_object_get(exact, "reveal_seq")));
		show_json_blocks(json_object_get(exact, "arguments"), "arguments");
		if (json_object_get(exact, "input")) {
			printf("input (the client's answers to the server's questions, as they will run):\n");
			show_json_blocks(json_object_get(exact, "input"), "input");
		}
		printf("call     ");
		show_str(json_string_value(json_object_get(exact, "call")), 0);
		printf("\n");
	}
	json_decref(exact);
	json_decref(rep);
	return 0;
}

static void print_request(const json_t *r)
{
	shown_marked = 0;
	const json_t *mk = json_object_get(r, "masked");
	if (mk) /* said first: the view differs from what runs in these marks only */
		printf("MASKED   this view hides %lld character%s in %lld marked span%s ([secret: N chars]); "
		       "assent show --full %s shows the exact %s (the ledger records that you looked)\n",
		       (long long)json_integer_value(json_object_get(mk, "chars")),
		       json_integer_value(json_object_get(mk, "chars")) == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(mk, "spans")),
		       json_integer_value(json_object_get(mk, "spans")) == 1 ? "" : "s",
		       json_string_value(json_object_get(r, "session_id")) ?: "ID",
		       json_object_get(r, "arguments") ? "call" : "request, where it is a gated call");
	const json_t *cut = json_object_get(r, "context");
	if (json_is_true(json_object_get(cut, "truncated")))
		printf("CUT      the context was cut for length: %lld bytes in all, the head shown\n",
		       (long long)json_integer_value(json_object_get(cut, "total_bytes")));
	printf("session  ");
	show_str(json_string_value(json_object_get(r, "session_id")), 0);
	printf("\ntype     ");
	show_str(json_string_value(json_object_get(r, "type")), 0);
	printf("\n");
	show_requester(json_object_get(r, "requester"));
	const char *aud = json_string_value(json_object_get(r, "audience"));
	if (aud) {
		printf("audience ");
		show_str(aud, 0);
		printf("\n");
	}
	long long left = json_integer_value(json_object_get(r, "deadline")) - (long long)time(NULL);
	printf("expires  in %lld s\n", left > 0 ? left : 0);
	if (!strcmp(json_string_value(json_object_get(r, "assurance")) ?: "", "passkey"))
		printf("approve  only on the review page, with your passkey (policy: assurance passkey); "
		       "`assent approve` says where\n");
	printf("action   ");
	show_str(json_string_value(json_object_get(r, "action")), 0);
	printf("\n\n");
	const json_t *msg = json_object_get(r, "message");
	if (json_is_string(msg))
		show_block(json_string_value(msg), json_string_length(msg));
	else
		show_str(NULL, 0);
	if (!strcmp(json_string_value(json_object_get(r, "type")) ?: "", "call"))
		print_call(r);
	const json_t *ctx = json_object_get(r, "context");
	if (ctx) {
		/* jansson escapes controls but leaves bidirectional and invisible characters as they are */
		printf("\ncontext:\n");
		if (json_is_string(ctx))
			show_block(json_string_value(ctx), json_string_length(ctx));
		else
			show_json_blocks(ctx, "context");
	}
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(r, "options"), i, o)
	{
		printf("  %zu. ", i + 1);
		show_str(json_string_value(o), 0);
		printf("\n");
	}
	const json_t *sub = json_object_get(r, "subject");
	json_array_foreach(sub, i, o)
	{
		printf("subject  ");
		show_str(json_string_value(json_object_get(o, "name")), 0);
		printf(" sha256:");
		show_str(json_string_value(json_object_get(json_object_get(o, "digest"), "sha256")), 0);
		printf(" (%s)\n", json_is_true(json_object_get(o, "computed")) ? "computed by the gateway"
									       : "asserted by the agent");
		print_content(o);
	}
	if (shown_marked)
		printf(
		    "\nnote: %zu control, bidirectional or invisible character%s in this request %s shown as \\uXXXX\n",
		    shown_marked, shown_marked == 1 ? "" : "s", shown_marked == 1 ? "is" : "are");
}

static int cmd_decide(const char *state, const char *sid, const char *outcome, const char *text, long n)
{
	json_t *req = json_pack("{s:s,s:s,s:s}", "cmd", "decide", "session_id", sid, "outcome", outcome);
	if (text)
		json_object_set_new(req, "text", json_string(text));
	if (n > 0)
		json_object_set_new(req, "option", json_integer(n));
	json_t *rep;
	int rc = ctl_call(state, req, &rep);
	if (rc != 0)
		return rc;
	if (json_is_true(json_object_get(rep, "pending")))
		printf("%s: approval %lld of %lld recorded; it waits for more distinct reviewers\n", sid,
		       (long long)json_integer_value(json_object_get(rep, "approvals")),
		       (long long)json_integer_value(json_object_get(rep, "quorum")));
	else
		printf("%s %s%s\n", sid, outcome,
		       json_is_true(json_object_get(rep, "token")) ? " (approval token issued)" : "");
	json_decref(rep);
	return 0;
}

/* Every request the reviewer may decide: the daemon answers in pages (each one
 * frame), fetched here from next_offset until none is left. */
static int pending_all(const char *state, json_t **rep)
{
	int rc = ctl_call(state, json_pack("{s:s}", "cmd", "pending"), rep);
	json_t *all = rc == 0 ? json_object_get(*rep, "requests") : NULL;
	for (int page = 0; rc == 0 && page < 100000 && json_is_integer(json_object_get(*rep, "next_offset")); page++) {
		json_int_t off = json_integer_value(json_object_get(*rep, "next_offset"));
		json_t *next;
		if ((rc = ctl_call(state, json_pack("{s:s,s:I}", "cmd", "pending", "offset", off), &next)) != 0)
			break;
		json_array_extend(all, json_object_get(next, "requests"));
		json_object_del(*rep, "next_offset");
		json_object_del(*rep, "more");
		json_t *no = json_object_get(next, "next_offset");
		if (json_is_integer(no) && json_integer_value(no) > off) {
			json_object_set(*rep, "next_offset", no);
			json_object_set(*rep, "more", json_object_get(next, "more"));
		}
		json_decref(next);
	}
	return rc;
}

static int cmd_review(const char *state)
{
	json_t *rep;
	int rc = pending_all(state, &rep);
	if (rc != 0)
		return rc;
	size_t i;
	json_t *r;
	json_t *reqs = json_object_get(rep, "requests");
	if (json_array_size(reqs) == 0)
		printf("nothing is pending\n");
	json_array_foreach(reqs, i, r)
	{
		json_t *full;
		const char *id = json_string_value(json_object_get(r, "session_id"));
		if (ctl_call(state, json_pack("{s:s,s:s}", "cmd", "show", "session_id", id), &full) != 0)
			continue; /* decided, timed out or cancelled since the list was made */
		printf("\n==== %zu of %zu ====\n", i + 1, json_array_size(reqs));
		print_request(json_object_get(full, "request"));
		json_decref(full);
		const char *type = json_string_value(json_object_get(r, "type"));
		const char *sid = json_string_value(json_object_get(r, "session_id"));
		int sel = !strcmp(type, "selection"), input = !strcmp(type, "input");
		printf("\n%s> ", sel	 ? "[number] select, [r]eject, [s]kip"
				 : input ? "[a]nswer, [r]eject, [s]kip"
					 : "[a]pprove, [r]eject, [s]kip");
		fflush(stdout);
		char *line = NULL;
		size_t cap = 0;
		if (getline(&line, &cap, stdin) <= 0) {
			free(line);
			break;
		}
		line[strcspn(line, "\n")] = 0;
		char *text = NULL;
		size_t tc = 0;
		if (line[0] == 'r') {
			printf("reason> ");
			fflush(stdout);
			if (getline(&text, &tc, stdin) > 0) {
				text[strcspn(text, "\n")] = 0;
				rc = cmd_decide(state, sid, "rejected", text, 0);
			}
		} else if (line[0] == 'a' && input) {
			printf("answer> ");
			fflush(stdout);
			if (getline(&text, &tc, stdin) > 0) {
				text[strcspn(text, "\n")] = 0;
				rc = cmd_decide(state, sid, "answered", text, 0);
			}
		} else if (line[0] == 'a' && !sel) {
			rc = cmd_decide(state, sid, "approved", NULL, 0);
		} else if (sel && line[0] >= '1' && line[0] <= '9') {
			rc = cmd_decide(state, sid, "selected", NULL, strtol(line, NULL, 10));
		}
		free(line);
		free(text);
	}
	json_decref(rep);
	return rc;
}

/* pending: every request this reviewer may decide, a line each (--json: as they are). */
static int reviewer_pending(const char *state, int json)
{
	json_t *rep;
	int rc;
	if ((rc = pending_all(state, &rep)) != 0)
		return rc;
	json_t *reqs = json_object_get(rep, "requests");
	if (json) {
		char *s = json_dumps(
		    reqs, JSON_INDENT(2) | JSON_ENSURE_ASCII); /* no raw bidi or invisible character on a terminal */
		printf("%s\n", s);
		free(s);
	} else {
		size_t i;
		json_t *r;
		if (json_array_size(reqs) == 0)
			printf("nothing is pending\n");
		json_array_foreach(reqs, i, r)
		{
			long long left = json_integer_value(json_object_get(r, "deadline")) - (long long)time(NULL);
			printf("%s  %-12s %4llds left  ", json_string_value(json_object_get(r, "session_id")),
			       json_string_value(json_object_get(r, "type")), left > 0 ? left : 0);
			const char *msg = json_string_value(json_object_get(r, "message"));
			size_t mn = msg ? strlen(msg) : 0;
			for (mn = mn > 70 ? 70 : mn; msg && mn > 0 && ((unsigned char)msg[mn] & 0xC0) == 0x80; mn--)
				; /* cut on a character boundary */
			show_text(msg ? msg : "", mn, 0);
			printf("\n");
		}
		if (json_integer_value(json_object_get(rep, "more")) > 0)
			printf("... and %lld more\n", (long long)json_integer_value(json_object_get(rep, "more")));
	}
	json_decref(rep);
	return 0;
}

/* status: the daemon's counters, a line each (--json: as they are). */
static int reviewer_status(const char *state, int json)
{
	json_t *rep;
	int rc;
	if ((rc = ctl_call(state, json_pack("{s:s}", "cmd", "status"), &rep)) != 0)
		return rc;
	json_object_del(rep, "ok");
	if (json) {
		char *s = json_dumps(rep, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
	} else {
		const char *k;
		json_t *v;
		json_object_foreach(rep, k, v)
		{
			printf("%-24s %lld\n", k, (long long)json_integer_value(v));
		}
	}
	json_decref(rep);
	return 0;
}

int cmd_reviewer(const char *state, int argc, char **argv)
{
	const char *cmd = argv[0];
	int json = argc > 1 && !strcmp(argv[argc - 1], "--json");
	if (json)
		argc--;
	json_t *rep;
	int rc;
	if (!strcmp(cmd, "pending") && argc == 1)
		return reviewer_pending(state, json);
	int full = argc == 3 && !strcmp(cmd, "show") && (!strcmp(argv[1], "--full") || !strcmp(argv[2], "--full"));
	if (!strcmp(cmd, "show") && (argc == 2 || full)) {
		const char *id = full && !strcmp(argv[1], "--full") ? argv[2] : argv[1];
		if ((rc = ctl_call(state, json_pack("{s:s,s:s}", "cmd", "show", "session_id", id), &rep)) != 0)
			return rc;
		if (full)
			return show_full(state, id, rep, json);
		if (json) {
			char *s = json_dumps(json_object_get(rep, "request"), JSON_INDENT(2) | JSON_ENSURE_ASCII);
			printf("%s\n", s);
			free(s);
		} else {
			print_request(json_object_get(rep, "request"));
		}
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "whoami") && argc == 1) {
		if ((rc = ctl_call(state, json_pack("{s:s}", "cmd", "whoami"), &rep)) != 0)
			return rc;
		printf("%s (uid %lld)\n", json_string_value(json_object_get(rep, "reviewer")),
		       (long long)json_integer_value(json_object_get(rep, "uid")));
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "status") && argc == 1)
		return reviewer_status(state, json);
	if (!strcmp(cmd, "approve") && (argc == 2 || (argc == 4 && !strcmp(argv[2], "-m"))))
		return cmd_decide(state, argv[1], "approved", argc == 4 ? argv[3] : NULL, 0);
	if (!strcmp(cmd, "reject") && argc == 4 && !strcmp(argv[2], "-m"))
		return cmd_decide(state, argv[1], "rejected", argv[3], 0);
	if (!strcmp(cmd, "reject"))
		return die(2, "reject needs a reason the agent will read: assent reject ID -m TEXT");
	if (!strcmp(cmd, "answer") && argc == 3)
		return cmd_decide(state, argv[1], "answered", argv[2], 0);
	if (!strcmp(cmd, "select") && argc == 3) {
		uint64_t n;
		if (parse_u64(argv[2], &n) != 0 || n < 1 || n > 64)
			return die(2, "select: '%s' is not an option number (1, 2, ...)", argv[2]);
		return cmd_decide(state, argv[1], "selected", NULL, (long)n);
	}
	if (!strcmp(cmd, "review") && argc == 1)
		return cmd_review(state);
	return die(2, "usage: assent %s ... (see assent --help)", cmd);
}
