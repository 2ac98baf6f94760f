/* The gate (issue 15): assent in front of upstream MCP servers. The signer starts each
 * server (with its own environment) and a jailed upstream worker on the server's pipes,
 * learns the server's tools from that worker, decides every call an agent makes of them
 * by the policy, records the call's lifecycle (request, decision, dispatch, outcome), and
 * only then tells the worker to forward it, once. Nothing here parses what a server
 * wrote: its tools and results arrive as canonical CBOR, checked before use. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GATE_META "io.assent/gate" /* the key of assent's facts in a result's _meta */
#define TOOL_TEXT_MAX 8192	   /* a tool's description or title, as shown */
#define NAME_MAX_SHOWN 128	   /* MCP's bound on a tool name, which NAME__TOOL must keep */

extern char **environ;

static struct upw *upw_of(struct signer *s, int k)
{
	return k >= W_UP0 && (size_t)(k - W_UP0) < s->nup ? &s->up[k - W_UP0] : NULL;
}

static int up_index(const struct signer *s, const char *name)
{
	for (size_t i = 0; i < s->nup; i++)
		if (!strcmp(s->up[i].cfg->name, name))
			return (int)i;
	return -1;
}

/* ---- starting the servers ---- */

static int all_ready(const struct signer *s)
{
	for (size_t i = 0; i < s->nup; i++)
		if (!s->up[i].ready)
			return 0;
	return 1;
}

/* Before agents are served: the upstreams' tools, so that a client's first tools/list (an
 * editor lists them as soon as it starts the bridge) has them. Only the upstream workers'
 * frames are read meanwhile (agents wait in the listen backlog, HTTP agents for their
 * F_HTTP_AUTH), for at most ASSENT_UPSTREAM_START_SECONDS (10); a server slower than that
 * adds its tools later, and clients hear notifications/tools/list_changed. */
static void gate_settle(struct signer *s)
{
	uint64_t v = 10;
	const char *t = getenv("ASSENT_UPSTREAM_START_SECONDS");
	if (t && *t && (parse_u64(t, &v) != 0 || v > 600))
		v = 10;
	uint64_t until = now_ms() + 1000 * v;
	while (!all_ready(s) && now_ms() < until) {
		struct pollfd pf[2 * UP_WORKERS];
		int ks[2 * UP_WORKERS], errs[UP_WORKERS];
		size_t n = 0;
		for (size_t i = 0; i < s->nup; i++) {
			struct worker *w = &s->w[W_UP0 + i];
			if (w->fd < 0)
				continue;
			ks[n] = W_UP0 + (int)i;
			pf[n++] = (struct pollfd){.fd = w->fd, .events = POLLIN};
		}
		size_t nw = n;
		n += gate_fds(s, pf + n, errs);
		if (poll(pf, n, 200) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < nw; i++)
			if (pf[i].revents)
				worker_input(s, ks[i]);
		for (size_t i = nw; i < n; i++)
			if (pf[i].revents)
				gate_stderr(s, errs[i - nw]);
	}
	for (size_t i = 0; i < s->nup; i++)
		if (!s->up[i].ready)
			slog("warning", "upstream %s: no tools yet after %llu s; agents get them when it is ready",
			     s->up[i].cfg->name, (unsigned long long)v);
}

static int resolve(struct signer *s, size_t i)
{
	const struct upstream *u = &s->ups->u[i];
	char port[8];
	snprintf(port, sizeof port, "%u", (unsigned)u->port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
	int rc = getaddrinfo(u->host, port, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof s->up[i].addr) {
		slog("error", "%s: server \"%s\": cannot resolve %s: %s", s->o->upstreams, u->name, u->host,
		     rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	memcpy(&s->up[i].addr, res->ai_addr, res->ai_addrlen);
	s->up[i].addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A url upstream's configuration for its worker: where (scheme, host, port, path), with
 * which headers (its credentials: to this worker only) and which CA. */
int gate_config(struct signer *s, int k, struct cv_arena *a, struct cv *f)
{
	const struct upstream *u = s->up[k - W_UP0].cfg;
	if (u->kind != UP_HTTP)
		return 0;
	struct cv *m = cv_map(a, u->ca ? 6 : 5), *hs = cv_array(a, u->nheaders), *slot = ipc_put(a, f, "url");
	if (!m || !hs || !slot)
		return AS_ENOMEM;
	size_t i = 0;
	int rc = kv_text(a, m, &i, "scheme", u->scheme, strlen(u->scheme)) |
		 kv_text(a, m, &i, "host", u->host, strlen(u->host)) | kv_uint(a, m, &i, "port", u->port) |
		 kv_text(a, m, &i, "path", u->path, strlen(u->path));
	if (u->ca)
		rc |= kv_text(a, m, &i, "ca", u->ca, strlen(u->ca));
	for (size_t h = 0; h < u->nheaders && !rc; h++) {
		struct cv *p = cv_array(a, 2);
		rc = !p || slot_text(a, &p->items[0], u->headers[h].key, strlen(u->headers[h].key)) ||
		     slot_text(a, &p->items[1], u->headers[h].value, strlen(u->headers[h].value));
		if (!rc)
			hs->items[h] = *p;
	}
	struct cv *x = kv(a, m, &i, "headers");
	if (!x)
		return AS_ENOMEM;
	*x = *hs;
	m->n = i;
	*slot = *m;
	return rc ? AS_ENOMEM : 0;
}

/* A url upstream's worker asks for a connection: the signer makes it, to the one address
 * resolved at start (a compromised worker reaches that server and nothing else), at most
 * 32 in ten seconds. */
int h_up_connect(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	(void)f;
	struct upw *u = upw_of(s, s->cur);
	if (!u || u->cfg->kind != UP_HTTP)
		return as_fail(err, AS_ECORRUPT, "F_UP_CONNECT from a worker of no url upstream");
	uint64_t now = now_ms();
	if (now - u->conn_window > 10000) {
		u->conn_window = now;
		u->conns = 0;
	}
	if (++u->conns > 32) {
		if (u->conns == 33)
			slog("warning",
			     "upstream %s: its worker asks for more than 32 connections in ten seconds: refused",
			     u->cfg->name);
		return 0;
	}
	int fd = socket(u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
	    (connect(fd, (const struct sockaddr *)&u->addr, u->addrlen) != 0 && errno != EINPROGRESS)) {
		slog("warning", "upstream %s: cannot connect to %s:%u: %s", u->cfg->name, u->cfg->host,
		     (unsigned)u->cfg->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0; /* the worker asks again */
	}
	struct cv_arena a;
	cv_arena_init(&a, 8);
	struct cv *sf = ipc_frame_new(&a, F_UP_SOCKET, 0);
	char e2[AS_ERRLEN];
	if (sf && ipc_conn_send(&s->w[s->cur].ipc, sf, fd, e2) != 0)
		slog("warning", "upstream %s: a connection could not be handed over: %s", u->cfg->name, e2);
	cv_arena_free(&a);
	close(fd);
	return 0;
}

int gate_start(struct signer *s)
{
	char err[AS_ERRLEN];
	const char *t = getenv("ASSENT_UPSTREAM_CALL_TIMEOUT");
	uint64_t v = 300;
	if (t && *t && (parse_u64(t, &v) != 0 || v < 1 || v > 86400)) {
		slog("error", "ASSENT_UPSTREAM_CALL_TIMEOUT=%.32s: expected seconds from 1 to 86400", t);
		return 2;
	}
	s->call_timeout_s = (unsigned)v;
	if (!s->o->upstreams)
		return 0;
	if (upstreams_load(s->o->upstreams, &s->ups, err) != 0) {
		slog("error", "%s", err);
		return 2;
	}
	if (s->ups->n > UP_WORKERS) {
		slog("error", "%s: %zu servers; the gate serves at most %d (one jailed worker, and uid, each)",
		     s->o->upstreams, s->ups->n, UP_WORKERS);
		return 2;
	}

	if (!(s->gcalls = calloc(GCALLS_MAX, sizeof *s->gcalls)) || !(s->asks = calloc(GASKS_MAX, sizeof *s->asks))) {
		slog("error", "out of memory");
		return 2;
	}
	s->nup = s->ups->n;
	for (size_t i = 0; i < s->nup; i++)
		if (s->ups->u[i].kind == UP_STDIO && geteuid() == 0 && !s->ups->u[i].has_uid)
			slog("warning", "upstream %s: its server runs as root (its entry names no \"uid\" to run as)",
			     s->ups->u[i].name);
	for (size_t i = 0; i < s->nup; i++) {
		s->up[i] = (struct upw){.cfg = &s->ups->u[i], .err_fd = -1};
		if (s->ups->u[i].kind == UP_HTTP && resolve(s, i) != 0) /* once, now: its worker reaches that alone */
			return 2;
		s->w[W_UP0 + i] = (struct worker){.kind = "upstream", .fd = -1};
		if (spawn_worker(s, W_UP0 + (int)i) != 0) {
			slog("error", "cannot start the worker of upstream %s", s->up[i].cfg->name);
			return 2;
		}
	}
	slog("info", "gate: %zu upstream servers from %s", s->nup, s->o->upstreams);
	gate_settle(s);
	return 0;
}

/* The server's environment: exactly what the file gives, plus PATH and HOME from the
 * daemon's own when the file names neither (a client starts `npx` so too). */
static char **server_env(const struct upstream *u)
{
	char **e = calloc(u->nenv + 3, sizeof *e);
	size_t n = 0;
	int has_path = 0, has_home = 0;
	for (size_t i = 0; e && i < u->nenv; i++) {
		has_path |= !strcmp(u->env[i].key, "PATH");
		has_home |= !strcmp(u->env[i].key, "HOME");
		if (asprintf(&e[n], "%s=%s", u->env[i].key, u->env[i].value) < 0)
			return NULL; /* in the child, about to exit */
		n++;
	}
	const char *p = getenv("PATH"), *h = getenv("HOME");
	if (e && !has_path && asprintf(&e[n], "PATH=%s", p ? p : "/usr/local/bin:/usr/bin:/bin") >= 0)
		n++;
	if (e && !has_home && h && asprintf(&e[n], "HOME=%s", h) >= 0)
		n++;
	return e;
}

/* The child: its own process group (so that it is stopped whole), the pipes as 0-2, its
 * directory and uid, its environment, then the command. Runs between fork and exec
 * only: the signer's memory is replaced at exec, so the server never holds a key. */
static void server_exec(const struct upstream *u, int in, int out, int errw, pid_t signer)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (setpgid(0, 0) != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errw, 2) < 0)
		_exit(126);
	closefrom(3);
	if (u->cwd && chdir(u->cwd) != 0) {
		dprintf(2, "assent: cannot enter %s: %s\n", u->cwd, strerror(errno));
		_exit(126);
	}
	if (geteuid() == 0 && u->has_uid &&
	    (setgroups(0, NULL) != 0 || setgid((gid_t)u->uid) != 0 || setuid(u->uid) != 0 || setuid(0) == 0)) {
		dprintf(2, "assent: cannot run as uid %u\n", (unsigned)u->uid);
		_exit(126);
	}
	/* A daemon killed with -9 takes its servers with it (they hold credentials): set after the
	 * uid change, which clears it, and checked against a parent that is gone already. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != signer)
		_exit(126);
	char **argv = calloc(u->nargs + 2, sizeof *argv), **envp = server_env(u);
	if (!argv || !envp)
		_exit(126);
	argv[0] = u->command;
	for (size_t i = 0; i < u->nargs; i++)
		argv[i + 1] = u->args[i];
	/* The command is looked up in the server's own PATH, as a client would. */
	for (char **e = envp; *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			setenv("PATH", *e + 5, 1);
	execvpe(u->command, argv, envp);
	dprintf(2, "assent: cannot run %s: %s\n", u->command, strerror(errno));
	_exit(127);
}

/* Starts upstream k's server: *to_server is its stdin's writing end, *from_server its
 * stdout's reading end (both for the worker). Its stderr stays with the signer (the log). */
int gate_spawn_server(struct signer *s, int k, int *to_server, int *from_server)
{
	struct upw *u = upw_of(s, k);
	int pin[2], pout[2], perr[2];
	if (!u || pipe2(pin, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(pout, O_CLOEXEC) != 0) {
		close(pin[0]);
		close(pin[1]);
		return -1;
	}
	if (pipe2(perr, O_CLOEXEC | O_NONBLOCK) != 0) {
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		return -1;
	}
	pid_t signer = getpid(), pid = fork();
	if (pid == 0)
		server_exec(u->cfg, pin[0], pout[1], perr[1], signer);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (pid < 0) {
		close(pin[1]);
		close(pout[0]);
		close(perr[0]);
		return -1;
	}
	setpgid(pid, pid); /* also here: whichever runs first */
	u->spid = pid;
	if (u->err_fd >= 0)
		close(u->err_fd);
	u->err_fd = perr[0];
	u->errlen = 0;
	*to_server = pin[1];
	*from_server = pout[0];
	slog("info", "upstream %s: started %s (pid %d)", u->cfg->name, u->cfg->command, (int)pid);
	return 0;
}

/* The server's stderr, line by line into the log: printable, cut, at most 50 lines in
 * ten seconds (a server that floods it does not flood the log). */
void gate_stderr(struct signer *s, int i)
{
	struct upw *u = &s->up[i];
	char b[4096];
	for (int turns = 0; turns < 16; turns++) {
		ssize_t r = read(u->err_fd, b, sizeof b);
		if (r <= 0) {
			if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(u->err_fd);
				u->err_fd = -1;
			}
			return;
		}
		for (ssize_t k = 0; k < r; k++) {
			char c = b[k];
			if (c != '\n' && u->errlen < sizeof u->errline - 1) {
				u->errline[u->errlen++] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c;
				continue;
			}
			if (c != '\n')
				continue; /* the rest of a long line is dropped */
			u->errline[u->errlen] = 0;
			uint64_t now = now_ms();
			if (now - u->err_window > 10000) {
				u->err_window = now;
				u->err_lines = 0;
			}
			if (u->errlen && ++u->err_lines <= 50)
				slog("info", "upstream %s stderr: %s%s", u->cfg->name, u->errline,
				     u->err_lines == 50 ? " (more lines in these ten seconds are not logged)" : "");
			u->errlen = 0;
		}
	}
}

size_t gate_fds(struct signer *s, struct pollfd *pf, int *who)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nup; i++)
		if (s->up[i].err_fd >= 0) {
			pf[n] = (struct pollfd){.fd = s->up[i].err_fd, .events = POLLIN};
			who[n++] = (int)i;
		}
	return n;
}

static void server_exited(const struct upw *u, int st)
{
	if (WIFEXITED(st))
		slog("warning", "upstream %s: its server exited with status %d", u->cfg->name, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		slog("warning", "upstream %s: its server died of signal %d", u->cfg->name, WTERMSIG(st));
}

static void kill_server(struct upw *u)
{
	if (u->spid <= 0)
		return;
	int st;
	if (waitpid(u->spid, &st, WNOHANG) == u->spid) /* it ended first (and its worker saw it) */
		server_exited(u, st);
	else if (kill(-u->spid, SIGKILL) == 0) /* its whole process group: npx and its children */
		waitpid(u->spid, &st, 0);
	kill(-u->spid, SIGKILL); /* what it left behind in its group */
	u->spid = 0;
}

void gate_reap(struct signer *s, pid_t p, int st)
{
	for (size_t i = 0; i < s->nup; i++)
		if (s->up[i].spid == p) {
			s->up[i].spid = 0;
			server_exited(&s->up[i], st);
			kill(-p, SIGKILL); /* what it left behind in its group */
		}
}

void gate_stop(struct signer *s)
{
	for (size_t i = 0; i < s->nup; i++)
		kill_server(&s->up[i]);
}

/* ---- the catalog: what agents see ---- */

static void send_catalog(struct signer *s)
{
	struct worker *w = &s->w[W_MCP];
	if (!s->nup || w->fd < 0)
		return;
	json_t *tools = json_array(), *routes = json_array();
	for (size_t i = 0; i < s->nup; i++)
		for (size_t t = 0; t < s->up[i].ntools; t++) {
			const struct up_tool *x = &s->up[i].tools[t];
			json_array_append(tools, x->def);
			json_array_append_new(
			    routes, json_pack("[O,s,s]", json_object_get(x->def, "name"), s->up[i].cfg->name, x->name));
		}
	/* Resources keep their URIs: a read goes to the server that listed the URI, else to
	 * the first whose template's literal start the URI has. Prompts are renamed as tools. */
	json_t *more = json_pack("{s:[],s:[],s:[],s:{},s:[],s:{},s:b}", "resources", "resourceTemplates", "prompts",
				 "resource_routes", "template_routes", "prompt_routes", "completions", 0);
	for (size_t i = 0; more && i < s->nup; i++) {
		const struct upw *u = &s->up[i];
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
	struct cv *f = ipc_frame_new(&a, F_CATALOG, 3);
	char err[AS_ERRLEN];
	if (!tj || !rj || !mj || strlen(tj) + strlen(rj) + strlen(mj) > IPC_FRAME_MAX - 4096)
		slog("error", "gate: the upstreams' tools, resources and prompts do not fit one frame: not served");
	else if (f && !ipc_put_text(&a, f, "tools", tj, strlen(tj)) && !ipc_put_text(&a, f, "routes", rj, strlen(rj)) &&
		 !ipc_put_text(&a, f, "more", mj, strlen(mj)) && ipc_conn_send(&w->ipc, f, -1, err) != 0)
		worker_down(s, W_MCP, "its socket is stuck");
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
	for (size_t i = 0; i < s->nup; i++) {
		if (&s->up[i] == self)
			continue;
		for (size_t t = 0; t < s->up[i].ntools; t++)
			if (!strcmp(json_string_value(json_object_get(s->up[i].tools[t].def, "name")), name))
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
static json_t *cbor_json(const struct cv *b, enum cv_type t, size_t max)
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
	*out = cbor_json(b, CV_ARRAY, PROTO_UP_TOOLS_MAX);
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

/* ---- a call from an agent ---- */

void gate_req_free(struct gate_req *g)
{
	if (!g)
		return;
	free(g->call);
	free(g->name);
	free(g->token);
	free(g->ustate);
	json_decref(g->input);
	json_decref(g->args);
	free(g);
}

void gate_evaluate(const struct req *r, struct pol_request *q)
{
	q->upstream = r->gate->upstream;
	q->tool = r->gate->tool[0] ? r->gate->tool : NULL; /* a resources/read names no tool */
	q->args = r->gate->args;
	q->annotations = r->gate->ann;
	q->message = NULL;
	q->context = NULL;
}

/* assent's facts into a result's _meta (taken). An upstream cannot speak for assent: keys
 * under io.assent/ are assent's alone, and the upstream's are dropped. */
static void gate_meta(json_t *res, json_t *facts)
{
	json_t *meta = json_object_get(res, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(res, "_meta", meta);
	}
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(meta, tmp, k, v)
	{
		if (!strncmp(k, "io.assent/", 10))
			json_object_del(meta, k);
	}
	json_object_set_new(meta, GATE_META, facts);
}

/* What the gate did with a call, for its record: its status and last ledger entry. */
static void note_facts(struct signer *s, uint64_t conn, const char *rid, const json_t *facts)
{
	const json_t *seq = json_object_get(facts, "outcome_seq");
	if (!seq)
		seq = json_object_get(facts, "decision_seq");
	rec_note(s, conn, rid, json_string_value(json_object_get(facts, "status")), 0,
		 (uint64_t)json_integer_value(seq));
}

/* The raw CallToolResult answer, with assent's facts in its _meta. */
static void answer_call(struct signer *s, uint64_t conn, const char *rid, json_t *res, json_t *facts)
{
	note_facts(s, conn, rid, facts);
	gate_meta(res, facts);
	send_result_raw(s, conn, rid, res);
	json_decref(res);
}

/* The same for a task's call: the answer is kept for its owner, its status the gate's. */
static void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s)
{
	json_t *r = json_pack("{s:O?,s:s,s:O}", "status", json_object_get(facts, "status"), "session_id", c->sid,
			      "io.assent/call_result", res);
	gate_meta(res, facts); /* res is r's too: the same object */
	json_decref(res);
	task_end(s, c->sid, c->conn, c->owner, c->created_ms, r);
}

static json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool);
static void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
			   json_t *facts);
static void answer_task(const struct gcall *c, json_t *res, json_t *facts, struct signer *s);

static void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     const char *text, json_t *facts)
{
	if (!g->task) {
		answer_refused(s, conn, rid, g->method, text, facts);
		return;
	}
	struct gcall c = {.task = 1, .conn = conn, .created_ms = g->created_ms};
	snprintf(c.sid, sizeof c.sid, "%s", sid);
	snprintf(c.owner, sizeof c.owner, "%s", g->owner);
	json_t *res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 1);
	answer_task(&c, res, facts, s);
}

static json_t *facts_of(const char *sid, const char *status, uint64_t seq, const char *upstream, const char *tool)
{
	json_t *f =
	    json_pack("{s:s,s:s,s:s,s:s}", "session_id", sid, "status", status, "upstream", upstream, "tool", tool);
	if (seq)
		json_object_set_new(f, "decision_seq", json_integer((json_int_t)seq));
	return f;
}

/* A forwarded call's facts: those above, the digest of the exact call that was decided, and
 * its approval token when the rule asked for one. */
static json_t *facts_call(const struct gcall *c, const char *status)
{
	json_t *f = facts_of(c->sid, status, c->seq, c->upstream, c->tool);
	if (c->digest[0])
		json_object_set_new(f, "call", json_string(c->digest));
	if (c->token[0])
		json_object_set_new(f, "approval_token", json_string(c->token));
	return f;
}

/* A gated call of g that ends without reaching its server: told, or kept for a task. */
static void refuse_g(struct signer *s, const struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     const char *text, json_t *facts);

/* A call that ends without reaching the server (or with the server's error): an isError
 * result saying why, or for another method than tools/call a JSON-RPC error with the
 * gate's facts as its data. */
static void answer_refused(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *text,
			   json_t *facts)
{
	if (method && strcmp(method, "tools/call")) {
		note_facts(s, conn, rid, facts);
		json_t *data = json_pack("{s:o}", GATE_META, facts);
		send_rpc_error(s, conn, rid, -32603, text, data);
		json_decref(data);
		return;
	}
	json_t *res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 1);
	answer_call(s, conn, rid, res, facts);
}

/* The view reviewers get: what the call is, from the signer's own copy of the catalog.
 * Its arguments are the exact ones but for secrets, each mark saying how many characters
 * it hides ("[secret: 41 chars]", common/redact.h: an agent cannot steer a mark over
 * text that runs); when anything is masked, "masked" says so first and how to see it
 * (assent show --full, which the ledger records as a reveal). fuzz/view checks the view
 * against the call with common/viewcheck.c, which knows nothing of the redactor. */
static json_t *call_view(const struct upw *u, const struct up_tool *t, const json_t *args, const json_t *input)
{
	static const struct redact_rules view_rules = {NULL, 0, NULL, 0, 1};
	json_t *shown = json_deep_copy(args), *answers = input ? json_deep_copy(input) : NULL;
	struct redact_stats st = {0, 0, 0};
	int rr = redact_json(shown, &view_rules, &st); /* what a reviewer reads and the ledger keeps */
	if (answers) /* a retry's answers to the server's questions run too (gatemrtr.c): shown alike */
		rr |= redact_json(answers, &view_rules, &st);
	(void)rr; /* it fails only on memory, leaving what it could not redact whole: refused below */
	char msg[256];
	snprintf(msg, sizeof msg, "Call %s of upstream %s%s", t->name, u->cfg->name,
		 answers ? ", with the client's answers to its questions" : "");
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "type", "call", "method", "tools/call", "message", msg,
			      "upstream", u->cfg->name, "tool", t->name, "arguments", shown ? shown : json_object());
	if (answers)
		json_object_set_new(v, "input", answers);
	if (st.keys + st.patterns > 0)
		json_object_set_new(v, "masked",
				    json_pack("{s:I,s:I}", "spans", (json_int_t)(st.keys + st.patterns), "chars",
					      (json_int_t)st.chars));
	json_t *ts = json_deep_copy(t->shown);
	if (json_object_get(ts, "annotations"))
		json_object_set_new(ts, "annotations_by", json_string("the upstream server (declared, not verified)"));
	json_object_set_new(v, "tool_info", ts);
	return v;
}

/* A resources/read's view: the server and the URI it would read. */
static json_t *read_view(const struct upw *u, const char *uri)
{
	char msg[300];
	snprintf(msg, sizeof msg, "Read a resource of upstream %s", u->cfg->name);
	return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "call", "method", "resources/read", "message", msg,
			 "upstream", u->cfg->name, "uri", uri);
}

/* The request entry's action fields: the view's call (redacted arguments, reals as text). */
static struct cv *call_action(struct cv_arena *a, const json_t *view, char *err)
{
	static const char *const keys[] = {"type", "method",	"message", "upstream", "tool",
					   "uri",  "arguments", "input",   "masked"};
	json_t *j = json_object();
	for (size_t k = 0; j && k < sizeof keys / sizeof *keys; k++)
		if (json_object_get(view, keys[k]))
			json_object_set(j, keys[k], json_object_get(view, keys[k]));
	struct cv *v = cv_alloc(a, 1);
	int rc = j && v ? cv_from_json_value(a, j, v, 0, 1, err) : as_fail(err, AS_ENOMEM, "out of memory");
	json_decref(j);
	return rc == 0 ? v : NULL;
}

static void call_end(struct signer *s, struct gcall *c, const char *status, const uint8_t *bytes, size_t n, json_t *res,
		     const char *text);

/* A free slot for a dispatched call. Slots are taken lowest first and every scan stops at
 * gcall_hi, one past the highest in use, so that the few calls in flight cost a few steps
 * per frame rather than GCALLS_MAX. */
static struct gcall *gcall_new(struct signer *s)
{
	for (size_t i = 0; i < GCALLS_MAX; i++)
		if (!s->gcalls[i].used) {
			if (i >= s->gcall_hi)
				s->gcall_hi = i + 1;
			return &s->gcalls[i];
		}
	return NULL;
}

static void gcall_free(struct signer *s, struct gcall *c)
{
	c->used = 0;
	while (s->gcall_hi && !s->gcalls[s->gcall_hi - 1].used)
		s->gcall_hi--;
}

/* Sends the dispatch frame: the call leaves now, once. */
static void dispatch_now(struct signer *s, struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
			 unsigned rule, int ledgered)
{
	struct gcall *c = gcall_new(s);
	struct worker *w = &s->w[g->k];
	char digest[72];
	call_digest(g->call, g->n, digest);
	rec_note(s, conn, rid, NULL, rule, 0); /* the rule that let it through, for its record */
	if (ledgered) /* a call the ledger holds (decided, not only recorded): its dispatch is an event; a
		       * read the policy lets through with `record calls` has its call record alone */
		rec_event_in(s, "call.dispatched", sid, rec_call_id(s, conn, rid),
			     json_pack("{s:s,s:s,s:s,s:I,s:b}", "upstream", g->upstream, "tool", g->tool, "call",
				       digest, "rule", (json_int_t)rule, "ledgered", ledgered));
	if (!c || w->fd < 0 || w->state != S_READY) {
		static const char gone[] = "the upstream server is not available now: the call was not forwarded";
		if (ledgered && c) { /* its dispatch entry is on disk: its outcome follows it */
			*c = (struct gcall){
			    .used = 1, .k = g->k, .ledgered = 1, .conn = conn, .seq = g->seq, .started_ms = now_ms()};
			snprintf(c->sid, sizeof c->sid, "%s", sid);
			snprintf(c->rid, sizeof c->rid, "%s", rid);
			snprintf(c->upstream, sizeof c->upstream, "%s", g->upstream);
			snprintf(c->tool, sizeof c->tool, "%s", g->tool);
			snprintf(c->method, sizeof c->method, "%s", g->method);
			c->task = g->task;
			snprintf(c->owner, sizeof c->owner, "%s", g->owner);
			c->created_ms = g->created_ms;
			call_end(s, c, "error", NULL, 0, NULL, gone);
			return;
		}
		refuse_g(s, g, sid, conn, rid, gone, facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		return;
	}
	*c = (struct gcall){.used = 1,
			    .k = g->k,
			    .caps = g->caps,
			    .ledgered = ledgered,
			    .cid = ++s->next_cid,
			    .conn = conn,
			    .seq = g->seq,
			    .started_ms = now_ms(),
			    .rule = rule};
	c->until_ms = c->started_ms + 1000ull * s->call_timeout_s;
	snprintf(c->sid, sizeof c->sid, "%s", sid);
	snprintf(c->rid, sizeof c->rid, "%s", rid);
	snprintf(c->upstream, sizeof c->upstream, "%s", g->upstream);
	snprintf(c->tool, sizeof c->tool, "%s", g->tool);
	snprintf(c->method, sizeof c->method, "%s", g->method);
	c->task = g->task;
	snprintf(c->owner, sizeof c->owner, "%s", g->owner);
	c->created_ms = g->created_ms;
	snprintf(c->digest, sizeof c->digest, "%s", digest);
	snprintf(c->token, sizeof c->token, "%s", g->token ? g->token : "");
	slog("debug", "dispatch: %s (call %llu, %s %s__%s, rule %u) to the upstream worker", sid,
	     (unsigned long long)c->cid, g->method, g->upstream, g->tool, rule);
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, F_DISPATCH, 5);
	char err[AS_ERRLEN];
	if (!f || ipc_put_uint(&a, f, "cid", c->cid) || ipc_put_bytes(&a, f, "call", g->call, g->n) ||
	    ipc_put_text(&a, f, "digest", digest, strlen(digest)) ||
	    (g->caps && ipc_put_uint(&a, f, "caps", g->caps)) ||
	    (g->ustate && ipc_put_text(&a, f, "state", g->ustate, strlen(g->ustate))) ||
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("error", "upstream %s: the dispatch of %s could not be sent; its outcome will be unknown",
		     g->upstream, sid);
	cv_arena_free(&a);
}

struct dispatched { /* a dispatch entry waiting for its commit */
	struct gate_req *g;
	char sid[PQ_SID_LEN + 1];
	char rid[PROTO_RID_MAX + 1];
	uint64_t conn;
	unsigned rule;
};

static void dispatch_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct dispatched *d = o->own;
	o->own = NULL;
	if (!pos) {
		slog("error", "dispatch of %s not recorded: %s; not forwarded", d->sid, err);
		refuse_g(s, d->g, d->sid, d->conn, d->rid,
			 "the gateway could not record the dispatch: the call was not forwarded",
			 facts_of(d->sid, "not_forwarded", d->g->seq, d->g->upstream, d->g->tool));
	} else {
		dispatch_now(s, d->g, d->sid, d->conn, d->rid, d->rule, 1);
	}
	gate_req_free(d->g);
	free(d);
}

/* Appends the dispatch entry (durable before the call leaves); takes g. */
static void dispatch(struct signer *s, struct gate_req *g, const char *sid, uint64_t conn, const char *rid,
		     unsigned rule)
{
	char digest[72], err[AS_ERRLEN] = "out of memory";
	call_digest(g->call, g->n, digest);
	struct worker *w = &s->w[g->k];
	if (w->fd < 0 || w->state != S_READY) { /* nothing leaves: said so, and recorded */
		append_simple(s, "abandoned", sid, "approved, but the upstream server was not available: not forwarded",
			      NULL);
		refuse_g(s, g, sid, conn, rid, "the upstream server is not available now: the call was not forwarded",
			 facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		gate_req_free(g);
		return;
	}
	struct dispatched *d = calloc(1, sizeof *d);
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 5);
	size_t i = 0;
	int rc = !d || !m;
	if (!rc)
		rc = kv_text(a, m, &i, "kind", "dispatch", 8) | kv_text(a, m, &i, "session_id", sid, strlen(sid)) |
		     kv_text(a, m, &i, "upstream", g->upstream, strlen(g->upstream)) |
		     kv_text(a, m, &i, "tool", g->tool, strlen(g->tool)) |
		     kv_text(a, m, &i, "call", digest, strlen(digest));
	struct op *o = NULL;
	if (!rc) {
		m->n = i;
		o = op_add(s, m, dispatch_done, err);
	}
	if (!o) {
		slog("error", "dispatch of %s not recorded: %s; not forwarded", sid, err);
		refuse_g(s, g, sid, conn, rid, "the gateway could not record the dispatch: the call was not forwarded",
			 facts_of(sid, "not_forwarded", g->seq, g->upstream, g->tool));
		gate_req_free(g);
		free(d);
		return;
	}
	d->g = g;
	d->conn = conn;
	d->rule = rule;
	snprintf(d->sid, sizeof d->sid, "%s", sid);
	snprintf(d->rid, sizeof d->rid, "%s", rid);
	o->own = d; /* dispatch_done's own record */
}

/* finish() of a gated call: approved, it is dispatched; otherwise the agent hears why
 * not, as an isError result. Returns 1 (it took the request). */
int gate_finish(struct signer *s, struct pq_item *it, json_t *result)
{
	struct req *r = it->data;
	struct gate_req *g = r->gate;
	g->seq = r->seq;
	const char *jwt = json_string_value(json_object_get(result, "approval_token"));
	if (jwt && strlen(jwt) < sizeof((struct gcall *)0)->token) /* token yes: it goes with the result */
		g->token = strdup(jwt);
	const char *status = json_string_value(json_object_get(result, "status"));
	if (json_is_true(json_object_get(result, "approved"))) {
		r->gate = NULL;
		dispatch(s, g, it->session_id, r->conn, r->rid, r->has_pd ? r->pd.line : 0);
	} else if (it->blocking || g->task) {
		const char *why = json_string_value(json_object_get(result, "response"));
		const char *who = json_string_value(json_object_get(result, "reviewer"));
		char text[1200];
		if (status && !strcmp(status, "timeout"))
			snprintf(text, sizeof text,
				 "timeout: no reviewer decided before the deadline; the call was not forwarded "
				 "(session_id %s)",
				 it->session_id);
		else if (status && !strcmp(status, "cancelled")) /* the daemon stopping (cancel_waiting) */
			snprintf(text, sizeof text, "%s; the call was not forwarded (session_id %s)",
				 json_string_value(json_object_get(result, "error")) ?: "cancelled", it->session_id);
		else if (status && !strcmp(status, "denied"))
			snprintf(text, sizeof text, "denied by the policy (rule %u): %s; the call was not forwarded",
				 r->has_pd ? r->pd.line : 0, why ? why : "no reason given");
		else
			snprintf(text, sizeof text, "%s by %s: %s; the call was not forwarded",
				 status ? status : "refused", who ? who : "a reviewer", why ? why : "no reason given");
		rec_note(s, r->conn, r->rid, NULL, r->has_pd ? r->pd.line : 0, 0);
		refuse_g(s, g, it->session_id, r->conn, r->rid, text,
			 facts_of(it->session_id, status ? status : "refused", r->seq, g->upstream, g->tool));
	}
	json_decref(result);
	req_free(r);
	return 1;
}

/* A client's subscription to a resource of an upstream: kept, so that the server's
 * notifications/resources/updated reach the clients that subscribed, and only them. */
static void subscription(struct signer *s, uint64_t conn, const char *up, const char *uri, int on)
{
	if (!s->subs)
		s->subs = json_array();
	size_t i;
	json_t *x;
	json_array_foreach(s->subs, i, x)
	{
		if ((uint64_t)json_integer_value(json_array_get(x, 0)) == conn &&
		    !strcmp(json_string_value(json_array_get(x, 1)), up) &&
		    !strcmp(json_string_value(json_array_get(x, 2)), uri)) {
			if (!on)
				json_array_remove(s->subs, i);
			return;
		}
	}
	if (on && json_array_size(s->subs) < 4096)
		json_array_append_new(s->subs, json_pack("[I,s,s]", (json_int_t)conn, up, uri));
}

/* Read an F_CALL: the connection, who asked, and the call (checked, digested). */
/* A 2026-07-28 call's caps, and the requestState a retry returns (gatemrtr.c): a state that
 * fails its checks is a protocol error, and nothing is forwarded (g is freed). */
static int retry_state(struct signer *s, struct gate_req *g, struct ipc_frame *f, const struct conn *c, const char *rid)
{
	const struct cv *caps = cv_get(f->body, "caps"), *st = cv_get(f->body, "state");
	g->caps = caps ? (unsigned)caps->u : 0;
	const char *why = "requestState: only a 2026-07-28 request carries one";
	if (!st || ((g->caps & PROTO_CAP_MODERN) && gate_state_open(s, g, st, &why) == 0))
		return 0;
	slog("warning", "a gated call's requestState refused (%s): %s", c->owner, why);
	send_rpc_error(s, c->id, rid, -32602, why, NULL);
	gate_req_free(g);
	return AS_EINVAL;
}

int h_call(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	const struct cv *rid = cv_get(f->body, "rid"), *client = cv_get(f->body, "client"),
			*call = cv_get(f->body, "call"), *hreq = cv_get(f->body, "hreq");
	GUARD(client_ok((const char *)client->s, client->n, err));
	uid_t uid = c->uid;
	if (c->http) {
		if (!hreq)
			return as_fail(err, AS_ECORRUPT, "IPC: missing field \"hreq\" (a call of an HTTP session)");
		GUARD(measured_take(s, hreq->u, c->id, &uid, err));
	}
	char r_id[PROTO_RID_MAX + 1];
	snprintf(r_id, sizeof r_id, "%.*s", (int)rid->n, (const char *)rid->s);
	struct cv_arena a;
	cv_arena_init(&a, PROTO_CALL_MAX);
	struct cv *cv;
	char why[AS_ERRLEN] = "";
	int rc = cbor_decode(call->s, call->n, &a, &cv, why);
	if (rc == 0)
		rc = call_check(cv, why);
	if (rc != 0) {
		cv_arena_free(&a);
		return as_fail(err, AS_ECORRUPT, "F_CALL: %s", why);
	}
	struct gate_req *g = calloc(1, sizeof *g);
	if (g) {
		call_names(cv, g->upstream, g->tool);
		snprintf(g->method, sizeof g->method, "%s", call_method(cv));
		if (!strncmp(g->method, "resources/", 10)) {
			char uri[CALL_URI_MAX + 1];
			call_name(cv, uri, sizeof uri);
			g->name = strdup(uri);
			g->args = json_pack("{s:s}", "uri", uri); /* what args.uri rules read */
		} else {
			g->args = call_args_json(cv);
			g->input = call_input_json(cv); /* a retry's answers (gatemrtr.c) */
		}
		g->call = malloc(call->n);
	}
	cv_arena_free(&a);
	if (!g || !g->args || !g->call) {
		gate_req_free(g);
		return AS_ENOMEM;
	}
	memcpy(g->call, call->s, call->n);
	g->n = call->n;
	snprintf(g->owner, sizeof g->owner, "%s", c->owner);
	if (retry_state(s, g, f, c, r_id) != 0)
		return 0;
	int ui = up_index(s, g->upstream);
	struct upw *u = ui >= 0 ? &s->up[ui] : NULL;
	const struct up_tool *t = NULL;
	int tool = !strcmp(g->method, "tools/call"), read = !strcmp(g->method, "resources/read");
	for (size_t i = 0; tool && u && i < u->ntools; i++)
		if (!strcmp(u->tools[i].name, g->tool))
			t = &u->tools[i];
	if (u && !tool && !read) { /* prompts, completions, subscriptions: served, not decided (they act on nothing) */
		if (!strcmp(g->method, "resources/subscribe") || !strcmp(g->method, "resources/unsubscribe"))
			subscription(s, c->id, g->upstream, g->name, g->method[10] == 's');
		char sid[PQ_SID_LEN + 1];
		pq_new_session_id(sid);
		g->k = W_UP0 + ui;
		dispatch_now(s, g, sid, c->id, r_id, 0, 0);
		gate_req_free(g);
		return 0;
	}
	if (!t && !(read && u)) { /* the catalog changed under the worker: not an attack */
		char text[300];
		snprintf(text, sizeof text, "%s %s has no tool %s (any more)", u ? "upstream" : "no upstream is called",
			 g->upstream, g->tool);
		answer_refused(s, c->id, r_id, g->method, text, facts_of("", "unknown_tool", 0, g->upstream, g->tool));
		gate_req_free(g);
		return 0;
	}
	g->k = W_UP0 + ui;
	g->ann = t ? t->ann : 0;
	const struct cv *tk = cv_get(f->body, "task");
	g->task = tk && tk->t == CV_TRUE && !strcmp(g->method, "tools/call");
	/* a call held open counts in its principal's blocking limit; a task does not hold one */
	if (request_over_limit(s, c, uid, r_id, strlen(r_id), !g->task)) {
		gate_req_free(g);
		return 0;
	}
	struct req *r = calloc(1, sizeof *r);
	if (!r) {
		gate_req_free(g);
		return AS_ENOMEM;
	}
	r->conn = c->id;
	r->uid = uid;
	r->gate = g;
	r->collect = g->task ? "task" : "wait";
	snprintf(r->rid, sizeof r->rid, "%s", r_id);
	snprintf(r->type, sizeof r->type, "call");
	snprintf(r->client, sizeof r->client, "%.*s", (int)client->n, (const char *)client->s);
	snprintf(r->owner, sizeof r->owner, "%s", c->owner);
	call_digest(g->call, g->n, r->action);
	r->subjects = json_array();
	struct pq_item it = {0};
	request_terms(s, c, r, 0, &it); /* the policy reads the call, never the view */
	it.requester_id = c->id;
	it.requester_uid = uid;
	it.blocking = !g->task; /* a task is collected: the agent hears at once that it is working */
	it.data = r;
	g->created_ms = it.created_ms;
	if (r->has_pd && r->pd.action == POL_ALLOW && r->pd.record_calls) { /* reads: no ledger entry, no view */
		r->gate = NULL;
		dispatch_now(s, g, it.session_id, c->id, r_id, r->pd.line, 0);
		gate_req_free(g);
		req_free(r);
		return 0;
	}
	r->view = t ? call_view(u, t, g->args, g->input) : read_view(u, g->name);
	json_object_set_new(r->view, "call", json_string(r->action));
	if (json_object_get(r->view, "masked") && exact_keep(s, g->call, g->n, r->action, why) != 0) {
		/* an auditor could not learn what ran: refused, nothing forwarded */
		slog("error", "a masked call's exact bytes could not be kept: %s", why);
		request_refused(s, c->id, r, why);
		return 0;
	}
	/* The request entry is encoded at once (op_add): the signer's arena serves to build it. */
	struct cv_arena *ea = &s->arena;
	cv_arena_reset(ea);
	struct cv *action = call_action(ea, r->view, why);
	const char *uid_agent = !c->http && s->reg ? registry_agent_by_uid(s->reg, c->uid) : NULL;
	struct cv *m = action ? request_entry(ea, action, c, r, &it, uid_agent) : NULL;
	request_view(r, c, &it, uid_agent);
	int decided = r->has_pd && r->pd.action != POL_ASK;
	struct op *o = NULL;
	char e2[AS_ERRLEN] = "out of memory";
	if (m)
		o = op_add(s, m, decided ? NULL : request_done, e2);
	if (!o) {
		request_refused(s, c->id, r, m ? e2 : why);
		return 0;
	}
	if (decided) {
		int task = g->task;
		policy_decide(s, c, &it, r);
		if (task) { /* decided at once, and still a task: it works until its call returns */
			json_t *res = result_base(it.session_id, "pending", 0);
			json_object_set_new(res, "deadline", json_integer((json_int_t)(it.deadline_ms / 1000)));
			send_result(s, c->id, r_id, res, 0);
			json_decref(res);
		}
		return 0;
	}
	o->it = it;
	o->conn = c->id;
	return 0;
}

/* ---- the server's answer ---- */

static struct gcall *gcall_find(struct signer *s, int k, uint64_t cid)
{
	for (size_t i = 0; i < s->gcall_hi; i++)
		if (s->gcalls[i].used && s->gcalls[i].k == k && s->gcalls[i].cid == cid)
			return &s->gcalls[i];
	return NULL;
}

struct outcome_wait { /* an outcome entry waiting for its commit, and the answer it frees */
	struct gcall c;
	json_t *res;
	char *text; /* res NULL: why the call ended without a result */
};

/* The agent's answer to a dispatched call: the server's result, or why there is none. */
static void call_answer(struct signer *s, const struct gcall *c, json_t *res, const char *text, json_t *facts)
{
	if (c->task) { /* a task: the result (or an isError one saying why) is kept for tasks/get */
		if (!res)
			res = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
					text ? text : "the call ended without a result", "isError", 1);
		answer_task(c, res, facts, s);
		return;
	}
	if (res)
		answer_call(s, c->conn, c->rid, res, facts);
	else
		answer_refused(s, c->conn, c->rid, c->method, text ? text : "the call ended without a result", facts);
}

static void outcome_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct outcome_wait *w = o->own;
	o->own = NULL;
	if (!pos) /* the server ran it: the agent hears its result, and the log why the ledger does not */
		slog("error", "outcome of %s not recorded: %s", w->c.sid, err);
	json_t *facts = facts_call(&w->c, "forwarded");
	if (pos)
		json_object_set_new(facts, "outcome_seq", json_integer((json_int_t)pos->seq));
	rec_event_in(s, "call.finished", w->c.sid, rec_call_id(s, w->c.conn, w->c.rid),
		     json_pack("{s:s,s:s,s:I,s:I,s:b}", "upstream", w->c.upstream, "tool", w->c.tool, "duration_ms",
			       (json_int_t)(now_ms() - w->c.started_ms), "outcome_seq",
			       (json_int_t)(pos ? pos->seq : 0), "error", w->text != NULL));
	call_answer(s, &w->c, w->res, w->text, facts);
	free(w->text);
	free(w);
}

/* Records a dispatched call's outcome (when it was ledgered) and answers its agent with res
 * (taken; NULL: an isError result, or JSON-RPC error, of text). */
static void call_end(struct signer *s, struct gcall *c, const char *status, const uint8_t *bytes, size_t n, json_t *res,
		     const char *text)
{
	struct gcall copy = *c;
	gcall_free(s, c);
	for (size_t i = 0; s->asks && i < GASKS_MAX; i++) /* its server's questions end with it */
		if (s->asks[i].used && s->asks[i].k == copy.k && s->asks[i].cid == copy.cid)
			s->asks[i].used = 0;
	if (!copy.ledgered) {
		call_answer(s, &copy, res, text, facts_call(&copy, "forwarded"));
		return;
	}
	char digest[72] = "";
	if (bytes)
		call_digest(bytes, n, digest);
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 6);
	size_t i = 0;
	int rc = !m;
	if (!rc)
		rc = kv_text(a, m, &i, "kind", "outcome", 7) |
		     kv_text(a, m, &i, "session_id", copy.sid, strlen(copy.sid)) |
		     kv_text(a, m, &i, "status", status, strlen(status)) |
		     kv_uint(a, m, &i, "duration_ms", now_ms() - copy.started_ms);
	if (!rc && bytes) {
		struct cv *r = kv(a, m, &i, "result");
		rc = slot_map(a, r, 2);
		size_t j = 0;
		if (!rc)
			rc = kv_text(a, r, &j, "sha256", digest + 7, 64) | kv_uint(a, r, &j, "size", n);
	}
	if (!rc && text)
		rc = kv_text(a, m, &i, "reason", text, strlen(text) > 400 ? 400 : strlen(text));
	struct outcome_wait *w = calloc(1, sizeof *w);
	char err[AS_ERRLEN] = "out of memory";
	struct op *o = NULL;
	if (!rc && w) {
		m->n = i;
		o = op_add(s, m, outcome_done, err);
	}
	if (!o) {
		slog("error", "outcome of %s not recorded: %s", copy.sid, err);
		call_answer(s, &copy, res, text, facts_call(&copy, "forwarded"));
		free(w);
		return;
	}
	w->c = copy;
	w->res = res;
	w->text = text ? strdup(text) : NULL;
	o->own = w; /* outcome_done's own record */
}

static void stale_add(struct upw *u, uint64_t cid)
{
	u->stale[u->nstale++ % (sizeof u->stale / sizeof *u->stale)] = cid;
}

static int stale_has(const struct upw *u, uint64_t cid)
{
	for (size_t i = 0; i < sizeof u->stale / sizeof *u->stale; i++)
		if (u->stale[i] == cid && cid)
			return 1;
	return 0;
}

int h_up_result(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t cid = cv_get(f->body, "cid")->u;
	const struct cv *rb = cv_get(f->body, "result"), *eb = cv_get(f->body, "error");
	if (!rb == !eb)
		return as_fail(err, AS_ECORRUPT, "F_UP_RESULT: exactly one of result and error");
	struct gcall *c = gcall_find(s, s->cur, cid);
	struct upw *u = upw_of(s, s->cur);
	if (!c) {
		if (u && stale_has(u, cid))
			return as_fail(err, AS_ENOTFOUND, "a late answer to call %llu, given up on: dropped",
				       (unsigned long long)cid);
		return as_fail(err, AS_ECORRUPT, "a result for call %llu, which was never dispatched to it",
			       (unsigned long long)cid);
	}
	if (eb) {
		char text[PROTO_UP_ERROR_MAX + 64];
		snprintf(text, sizeof text, "upstream %s: %.*s", c->upstream, (int)eb->n, (const char *)eb->s);
		const struct cv *unk = cv_get(f->body, "unknown");
		call_end(s, c, unk && unk->t == CV_TRUE ? "unknown" : "error", NULL, 0, NULL, text);
		return 0;
	}
	json_t *res = cbor_json(rb, CV_MAP, PROTO_UP_RESULT_MAX);
	if (!res)
		return as_fail(err, AS_ECORRUPT, "F_UP_RESULT: result is not a canonical CBOR map");
	const char *rt = json_string_value(json_object_get(res, "resultType"));
	if (rt && strcmp(rt, "complete") && strcmp(rt, "input_required")) {
		char text[200];
		snprintf(text, sizeof text,
			 "upstream %s: its answer has resultType \"%.40s\", which assent does not carry", c->upstream,
			 rt);
		json_decref(res);
		call_end(s, c, "error", NULL, 0, NULL, text);
		return 0;
	}
	if (rt && !strcmp(rt, "input_required")) {
		char why[AS_ERRLEN], text[AS_ERRLEN + 64];
		json_t *ir = gate_input_required(s, c, res, why); /* its questions, with a state of ours */
		json_decref(res);
		snprintf(text, sizeof text, "upstream %s: %s", c->upstream, why);
		if (ir)
			call_end(s, c, "input_required", rb->s, rb->n, ir, NULL);
		else
			call_end(s, c, "error", NULL, 0, NULL, text);
		return 0;
	}
	call_end(s, c, json_is_true(json_object_get(res, "isError")) ? "is_error" : "ok", rb->s, rb->n, res, NULL);
	return 0;
}

/* Dispatched calls whose server did not answer in ASSENT_UPSTREAM_CALL_TIMEOUT: the agent
 * is told, and the outcome is unknown (it may have run). */
void gate_tick(struct signer *s)
{
	if (!s->gcalls)
		return;
	uint64_t now = now_ms();
	for (size_t i = 0; i < s->gcall_hi; i++) {
		struct gcall *c = &s->gcalls[i];
		if (!c->used || c->until_ms > now)
			continue;
		struct upw *u = upw_of(s, c->k);
		if (u)
			stale_add(u, c->cid);
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s did not answer within %u s (ASSENT_UPSTREAM_CALL_TIMEOUT): the call was "
			 "forwarded and its outcome is unknown",
			 c->upstream, s->call_timeout_s);
		call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}

/* Upstream worker k is down: its server goes too, and the calls in flight end unknown. */
void gate_worker_down(struct signer *s, int k, const char *why)
{
	struct upw *u = upw_of(s, k);
	if (!u)
		return;
	kill_server(u);
	u->ready = 0;
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++) {
		struct gcall *c = &s->gcalls[i];
		if (!c->used || c->k != k)
			continue;
		char text[300];
		snprintf(text, sizeof text,
			 "upstream %s stopped (%s) while the call was in flight: it was forwarded and its outcome is "
			 "unknown",
			 c->upstream, why);
		call_end(s, c, "unknown", NULL, 0, NULL, text);
	}
}

/* ---- what passes through during a call: progress, log messages, cancellation ---- */

/* The only call in flight to upstream k: a log message a server sends names no call, so it
 * reaches an agent only when it can be only this one's; NULL when there are none or several. */
static struct gcall *only_call(struct signer *s, int k)
{
	struct gcall *one = NULL;
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++)
		if (s->gcalls[i].used && s->gcalls[i].k == k) {
			if (one)
				return NULL;
			one = &s->gcalls[i];
		}
	return one;
}

static void note_to(struct signer *s, uint64_t conn, const char *rid, const char *method, const char *js)
{
	struct cv_arena fa;
	cv_arena_init(&fa, 16);
	struct cv *nf = ipc_frame_new(&fa, F_NOTE, 4);
	char e2[AS_ERRLEN];
	struct worker *w = &s->w[W_MCP];
	if (js && nf && w->fd >= 0 && !ipc_put_uint(&fa, nf, "conn", conn) &&
	    !ipc_put_text(&fa, nf, "rid", rid, strlen(rid)) &&
	    !ipc_put_text(&fa, nf, "method", method, strlen(method)) &&
	    !ipc_put_text(&fa, nf, "json", js, strlen(js)) && ipc_conn_send(&w->ipc, nf, -1, e2) != 0)
		worker_down(s, W_MCP, "its socket is stuck");
	cv_arena_free(&fa);
}

/* A resource of upstream s->cur changed: each client subscribed to it hears so. */
static int resource_updated(struct signer *s, const struct cv *pb, char *err)
{
	json_t *params = cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	const char *uri = json_string_value(json_object_get(params, "uri"));
	struct upw *u = upw_of(s, s->cur);
	if (!uri || !u) {
		json_decref(params);
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: a resource update without its uri");
	}
	json_t *p = json_pack("{s:s}", "uri", uri);
	char *js = p ? json_dumps(p, JSON_COMPACT) : NULL;
	size_t i;
	json_t *x;
	json_array_foreach(s->subs, i, x)
	{
		if (!strcmp(json_string_value(json_array_get(x, 1)), u->cfg->name) &&
		    !strcmp(json_string_value(json_array_get(x, 2)), uri))
			note_to(s, (uint64_t)json_integer_value(json_array_get(x, 0)), "",
				"notifications/resources/updated", js);
	}
	free(js);
	json_decref(p);
	json_decref(params);
	return 0;
}

int h_up_note(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t cid = cv_get(f->body, "cid")->u;
	const struct cv *mt = cv_get(f->body, "method"), *pb = cv_get(f->body, "params");
	int progress = cv_text_eq(mt, "notifications/progress"), log = cv_text_eq(mt, "notifications/message");
	if (cv_text_eq(mt, "notifications/resources/updated") && cid == 0)
		return resource_updated(s, pb, err);
	if (!progress && !log)
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: a notification the gate does not relay");
	if (cid > s->next_cid || (progress != (cid != 0)))
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: about call %llu, which was never dispatched",
			       (unsigned long long)cid);
	struct gcall *c = cid ? gcall_find(s, s->cur, cid) : only_call(s, s->cur);
	if (!c)
		return 0; /* the call ended meanwhile, or a log message for no one call: dropped */
	json_t *params = cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	if (!params)
		return as_fail(err, AS_ECORRUPT, "F_UP_NOTE: params is not a canonical CBOR map");
	char *js = json_dumps(params, JSON_COMPACT);
	json_decref(params);
	note_to(s, c->conn, c->rid, progress ? "notifications/progress" : "notifications/message", js);
	free(js);
	return 0;
}

/* The agent cancelled a call that was forwarded: its server is told (MCP cancellation),
 * and the call ends outcome unknown (it may have run); a late answer is dropped. */
void gate_cancel(struct signer *s, uint64_t conn, const char *rid)
{
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++) {
		struct gcall *c = &s->gcalls[i];
		if (!c->used || c->conn != conn || strcmp(c->rid, rid))
			continue;
		struct cv_arena a;
		cv_arena_init(&a, 16);
		struct cv *f = ipc_frame_new(&a, F_UP_CANCEL, 1);
		char err[AS_ERRLEN];
		struct worker *w = &s->w[c->k];
		if (f && w->fd >= 0 && !ipc_put_uint(&a, f, "cid", c->cid) && ipc_conn_send(&w->ipc, f, -1, err) != 0)
			slog("warning", "upstream %s: its cancel could not be sent", c->upstream);
		cv_arena_free(&a);
		struct upw *u = upw_of(s, c->k);
		if (u)
			stale_add(u, c->cid);
		c->conn = 0; /* nobody waits for an answer now */
		call_end(s, c, "unknown", NULL, 0, NULL, "the agent cancelled the call after it was forwarded");
	}
}

/* ---- a server's requests of the client: to the client of the call, never another ---- */

static void up_answer(struct signer *s, int k, const char *sid, const char *key, const uint8_t *p, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *f = ipc_frame_new(&a, F_UP_ANSWER, 2);
	char err[AS_ERRLEN];
	struct worker *w = &s->w[k];
	if (f && w->fd >= 0 && !ipc_put_text(&a, f, "sid", sid, strlen(sid)) && !ipc_put_bytes(&a, f, key, p, n) &&
	    ipc_conn_send(&w->ipc, f, -1, err) != 0)
		slog("warning", "upstream worker %d: an answer could not be sent", k - W_UP0);
	cv_arena_free(&a);
}

/* An error for the server's request, as canonical CBOR {code, message}. */
static void up_refuse(struct signer *s, int k, const char *sid, const char *why)
{
	json_t *e = json_pack("{s:i,s:s}", "code", -32603, "message", why);
	struct buf b;
	buf_init(&b, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	if (e && call_value_encode(e, PROTO_UP_NOTE_MAX, &b, err) == 0)
		up_answer(s, k, sid, "error", b.p, b.len);
	buf_free(&b);
	json_decref(e);
}

/* A server's roots/list that no single call's client can answer (at start-up, or with several
 * calls in flight), answered as a client would: with the entry's "roots" (none: empty). */
static void up_roots(struct signer *s, int k, const char *sid)
{
	const struct upw *u = upw_of(s, k);
	json_t *list = json_array();
	static char uri[3 * UP_STRING_MAX + 8];
	for (size_t i = 0; u && list && i < u->cfg->nroots; i++)
		if (upstreams_file_uri(u->cfg->roots[i], uri, sizeof uri) == 0)
			json_array_append_new(list, json_pack("{s:s,s:s}", "uri", uri, "name", u->cfg->roots[i]));
	json_t *r = json_pack("{s:o}", "roots", list);
	struct buf b;
	buf_init(&b, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	if (r && call_value_encode(r, PROTO_UP_NOTE_MAX, &b, err) == 0)
		up_answer(s, k, sid, "result", b.p, b.len);
	else
		up_refuse(s, k, sid, "the configured roots do not fit one answer");
	buf_free(&b);
	json_decref(r);
}

int h_up_ask(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	const struct cv *sv = cv_get(f->body, "sid"), *mt = cv_get(f->body, "method"), *pb = cv_get(f->body, "params");
	char sid[PROTO_RID_MAX + 1];
	snprintf(sid, sizeof sid, "%.*s", (int)sv->n, (const char *)sv->s);
	if (!cv_text_eq(mt, "sampling/createMessage") && !cv_text_eq(mt, "elicitation/create") &&
	    !cv_text_eq(mt, "roots/list"))
		return as_fail(err, AS_ECORRUPT, "F_UP_ASK: a request the gate does not relay");
	json_t *params = cbor_json(pb, CV_MAP, PROTO_UP_NOTE_MAX);
	if (!params)
		return as_fail(err, AS_ECORRUPT, "F_UP_ASK: params is not a canonical CBOR map");
	/* Over stdio a server's request names no call: it is relayed only when it can be only
	 * one agent's, the client of the one call in flight to this server. */
	struct gcall *c = only_call(s, s->cur);
	if (!c && cv_text_eq(mt, "roots/list")) { /* no one client to ask: the operator's roots */
		json_decref(params);
		up_roots(s, s->cur, sid);
		return 0;
	}
	struct gask *q = NULL;
	for (size_t i = 0; c && i < GASKS_MAX && !q; i++)
		if (!s->asks[i].used)
			q = &s->asks[i];
	if (!c || !q) {
		json_decref(params);
		up_refuse(s, s->cur, sid,
			  c ? "too many requests are waiting for clients"
			    : "assent relays a server's request only to the client of its one call in flight");
		return 0;
	}
	*q = (struct gask){.used = 1, .k = s->cur, .aid = ++s->next_aid, .cid = c->cid, .conn = c->conn};
	snprintf(q->sid, sizeof q->sid, "%s", sid);
	char *js = json_dumps(params, JSON_COMPACT);
	json_decref(params);
	char m[32];
	snprintf(m, sizeof m, "%.*s", (int)mt->n, (const char *)mt->s);
	struct cv_arena fa;
	cv_arena_init(&fa, 16);
	struct cv *nf = ipc_frame_new(&fa, F_ASK, 5);
	char e2[AS_ERRLEN];
	struct worker *w = &s->w[W_MCP];
	if (js && nf && w->fd >= 0 && !ipc_put_uint(&fa, nf, "conn", c->conn) &&
	    !ipc_put_text(&fa, nf, "rid", c->rid, strlen(c->rid)) && !ipc_put_uint(&fa, nf, "aid", q->aid) &&
	    !ipc_put_text(&fa, nf, "method", m, strlen(m)) && !ipc_put_text(&fa, nf, "json", js, strlen(js)) &&
	    ipc_conn_send(&w->ipc, nf, -1, e2) != 0)
		worker_down(s, W_MCP, "its socket is stuck");
	free(js);
	cv_arena_free(&fa);
	return 0;
}

/* The client's answer, to the server that asked: only from the connection that was asked. */
int h_answer(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t conn = cv_get(f->body, "conn")->u, aid = cv_get(f->body, "aid")->u;
	const struct cv *rb = cv_get(f->body, "result"), *eb = cv_get(f->body, "error");
	if (!rb == !eb)
		return as_fail(err, AS_ECORRUPT, "F_ANSWER: exactly one of result and error");
	struct gask *q = NULL;
	for (size_t i = 0; s->asks && i < GASKS_MAX && !q; i++)
		if (s->asks[i].used && s->asks[i].aid == aid)
			q = &s->asks[i];
	if (!q) {
		if (aid && aid <= s->next_aid)
			return as_fail(err, AS_ENOTFOUND, "an answer to request %llu, which ended: dropped",
				       (unsigned long long)aid);
		return as_fail(err, AS_ECORRUPT, "an answer to request %llu, which was never asked",
			       (unsigned long long)aid);
	}
	if (q->conn != conn)
		return as_fail(err, AS_ECORRUPT, "an answer to request %llu from connection %llu, which was not asked",
			       (unsigned long long)aid, (unsigned long long)conn);
	q->used = 0;
	if (gcall_find(s, q->k, q->cid)) /* its call still runs: the server still waits */
		up_answer(s, q->k, q->sid, rb ? "result" : "error", rb ? rb->s : eb->s, rb ? rb->n : eb->n);
	return 0;
}

/* A connection ended: its subscriptions go with it. */
void gate_conn_end(struct signer *s, uint64_t conn)
{
	for (size_t i = json_array_size(s->subs); i-- > 0;)
		if ((uint64_t)json_integer_value(json_array_get(json_array_get(s->subs, i), 0)) == conn)
			json_array_remove(s->subs, i);
}

/* ---- gated calls collected as tasks ---- */

static struct gcall *task_call(struct signer *s, const char *sid, const char *owner)
{
	for (size_t i = 0; s->gcalls && i < s->gcall_hi; i++)
		if (s->gcalls[i].used && s->gcalls[i].task && !strcmp(s->gcalls[i].sid, sid) &&
		    !strcmp(s->gcalls[i].owner, owner))
			return &s->gcalls[i];
	return NULL;
}

/* A task whose call was forwarded and has not returned: working. NULL: no such call. */
json_t *gate_task_state(struct signer *s, const char *sid, const char *owner)
{
	const struct gcall *c = task_call(s, sid, owner);
	return c ? json_pack("{s:s,s:s,s:I,s:I}", "state", "working", "session_id", sid, "created_ms",
			     (json_int_t)c->created_ms, "updated_ms", (json_int_t)c->started_ms)
		 : NULL;
}

/* tasks/cancel of a forwarded call: its server is told; 1 when there was one. */
int gate_task_cancel(struct signer *s, const char *sid, const char *owner)
{
	struct gcall *c = task_call(s, sid, owner);
	if (!c)
		return 0;
	gate_cancel(s, c->conn, c->rid);
	return 1;
}
