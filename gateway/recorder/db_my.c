/* The recorder's MySQL / MariaDB connection (db_my.h): libmariadb's prepared statements
 * behind db.h's calls, so that store.c's queries run here as they run on SQLite and
 * PostgreSQL. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mariadb/errmsg.h>
#include <mariadb/mysql.h>

#include "gateway/recorder/db_my.h"
#include "gateway/proto/myurl.h"
#include "common/util.h"

#define MY_COL_BUF 256	    /* a result column's first buffer; longer values are fetched again */
#define MY_PARAMS_MAX 65535 /* placeholders in one statement (the protocol's count is 16 bits) */
#define MY_TIMEOUT_S 10	    /* connecting */
#define MY_IO_TIMEOUT_S 60  /* reading or writing once connected: past InnoDB's 50 s lock wait */
#define MY_TEXT_PREFIX "MariaDB"

struct my_stmt {
	const char *key; /* the caller's SQL pointer */
	char *sql;	 /* its text, to confirm a hit */
	MYSQL_STMT *st;
	unsigned long used;
	uint16_t *idx;	  /* placeholder k binds params[idx[k]] */
	uint8_t *isint;	  /* ... as an integer (CAST($n AS BIGINT)) */
	size_t nph, want; /* placeholders; the highest $n */
};

struct dbmy {
	struct myurl u;
	char where[MYURL_HOST_MAX + MYURL_SOCK_MAX + 32]; /* "127.0.0.1:3306" or "socket /path", for errors */
	MYSQL *c;
	struct my_stmt cache[DB_STMT_CACHE];
	unsigned long clock;
	MYSQL_BIND *pb; /* parameter binds, grown to the largest statement */
	long long *pv;
	unsigned long *pl;
	size_t pcap;
};

/* ---- errors ---- */

/* What a server or client error number means for the caller (db.h): retry or not. */
static int my_code(unsigned e)
{
	if (e == CR_OUT_OF_MEMORY || e == 1037 || e == 1038) /* ER_OUTOFMEMORY, ER_OUT_OF_SORTMEMORY */
		return AS_ENOMEM;
	if (e >= CR_MIN_ERROR && e < 3000)
		return AS_EIO; /* the client: connection lost, server gone, cannot connect */
	switch (e) {
	case 1021: /* ER_DISK_FULL */
	case 1030: /* ER_GET_ERRNO: the storage engine */
	case 1040: /* ER_CON_COUNT_ERROR */
	case 1053: /* ER_SERVER_SHUTDOWN */
	case 1114: /* ER_RECORD_FILE_FULL */
	case 1152: /* ER_ABORTING_CONNECTION */
	case 1184: /* ER_NEW_ABORTING_CONNECTION */
	case 1205: /* ER_LOCK_WAIT_TIMEOUT */
	case 1213: /* ER_LOCK_DEADLOCK */
	case 1290: /* ER_OPTION_PREVENTS_STATEMENT: read-only, e.g. a replica during a failover */
	case 1317: /* ER_QUERY_INTERRUPTED */
	case 1927: /* ER_CONNECTION_KILLED */
	case 4031: /* ER_CLIENT_INTERACTION_TIMEOUT */
		return AS_EIO;
	default:
		return AS_EINVAL; /* syntax, missing table or column, constraint, data */
	}
}

static int my_fail(struct dbmy *m, unsigned e, const char *msg, const char *sql, char *err)
{
	char line[AS_ERRLEN], shown[DB_SQL_SHOWN + 4];
	snprintf(line, sizeof line, "%s", msg && *msg ? msg : "no message");
	line[strcspn(line, "\r\n")] = 0;
	db_mask(line, m->u.pass);
	return as_fail(err, my_code(e), MY_TEXT_PREFIX ": %s (in %s)", line, db_sql_shown(sql, shown));
}

/* ---- connecting ---- */

static void cache_drop(struct dbmy *m)
{
	for (size_t i = 0; i < DB_STMT_CACHE; i++) {
		struct my_stmt *s = &m->cache[i];
		if (s->st)
			mysql_stmt_close(s->st);
		free(s->sql);
		free(s->idx);
		free(s->isint);
		memset(s, 0, sizeof *s);
	}
}

static void my_disconnect(struct dbmy *m)
{
	cache_drop(m);
	if (m->c)
		mysql_close(m->c);
	m->c = NULL;
}

/* Strict (a value that does not fit is an error, never truncated), ANSI quotes ("key" is a
 * column) and || (concatenation, as in the other two), UTC; whatever the server's defaults say. */
static const char my_session[] =
    "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,ANSI_QUOTES,PIPES_AS_CONCAT,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'";

static int my_connect(struct dbmy *m, char *err)
{
	MYSQL *c = mysql_init(NULL);
	if (!c)
		return as_fail(err, AS_ENOMEM, MY_TEXT_PREFIX ": out of memory connecting");
	unsigned timeout = MY_TIMEOUT_S, io = MY_IO_TIMEOUT_S, zero = 0;
	unsigned proto = m->u.socket[0] ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
	my_bool yes = 1, no = 0;
	/* No LOAD DATA LOCAL: a server must never make the recorder read a file. The protocol is
	 * explicit, so that "localhost" with a port is TCP, as the URL says. */
	if (mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout) || mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &io) ||
	    mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &io) || mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4") ||
	    mysql_options(c, MYSQL_OPT_LOCAL_INFILE, &zero) || mysql_options(c, MYSQL_OPT_PROTOCOL, &proto) ||
	    mysql_options(c, MYSQL_REPORT_DATA_TRUNCATION, &yes) || mysql_options(c, MYSQL_OPT_RECONNECT, &no)) {
		mysql_close(c);
		return as_fail(err, AS_EIO, MY_TEXT_PREFIX ": the client library refused an option");
	}
	if (!mysql_real_connect(c, m->u.socket[0] ? "localhost" : m->u.host, m->u.user,
				m->u.has_pass ? m->u.pass : NULL, m->u.db, m->u.port,
				m->u.socket[0] ? m->u.socket : NULL, CLIENT_FOUND_ROWS)) {
		char line[AS_ERRLEN];
		snprintf(line, sizeof line, "%s", mysql_error(c));
		line[strcspn(line, "\r\n")] = 0;
		db_mask(line, m->u.pass);
		mysql_close(c);
		return as_fail(err, AS_EIO, "cannot connect to " MY_TEXT_PREFIX " at %s as %s, database %s: %s",
			       m->where, m->u.user, m->u.db, line);
	}
	if (mysql_real_query(c, my_session, sizeof my_session - 1)) {
		char line[AS_ERRLEN];
		snprintf(line, sizeof line, "%s", mysql_error(c));
		mysql_close(c);
		return as_fail(err, AS_EIO, MY_TEXT_PREFIX ": cannot set the session's time zone and SQL mode: %s",
			       line);
	}
	m->c = c;
	return 0;
}

int dbmy_open(const char *url, struct dbmy **out, char *err)
{
	*out = NULL;
	struct dbmy *m = calloc(1, sizeof *m);
	if (!m)
		return as_fail(err, AS_ENOMEM, "out of memory opening the database");
	int rc = myurl_parse(url, &m->u, err);
	if (rc == 0) {
		if (m->u.socket[0])
			snprintf(m->where, sizeof m->where, "socket %s", m->u.socket);
		else
			snprintf(m->where, sizeof m->where, strchr(m->u.host, ':') ? "[%s]:%u" : "%s:%u", m->u.host,
				 m->u.port);
		rc = my_connect(m, err);
	}
	if (rc < 0) {
		dbmy_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

void dbmy_close(struct dbmy *m)
{
	if (!m)
		return;
	my_disconnect(m);
	free(m->pb);
	free(m->pv);
	free(m->pl);
	explicit_bzero(&m->u, sizeof m->u);
	free(m);
}

int dbmy_reconnect(struct dbmy *m, char *err)
{
	my_disconnect(m);
	return my_connect(m, err);
}

unsigned dbmy_tcp_port(const char *url)
{
	struct myurl u;
	unsigned port = myurl_parse(url, &u, NULL) == 0 ? u.port : 0;
	explicit_bzero(&u, sizeof u);
	return port;
}

/* ---- statements ---- */

/* CAST( $n AS TEXT|BIGINT ) at p (any case, any spaces): its length, *n and *isint; 0 if not. */
static size_t cast_at(const char *p, size_t *n, int *isint)
{
	const char *s = p;
	if (strncasecmp(s, "CAST(", 5))
		return 0;
	for (s += 5; *s == ' '; s++)
		;
	if (*s != '$' || !isdigit((unsigned char)s[1]))
		return 0;
	char *end;
	*n = strtoul(s + 1, &end, 10);
	for (s = end; *s == ' '; s++)
		;
	if (strncasecmp(s, "AS ", 3))
		return 0;
	for (s += 3; *s == ' '; s++)
		;
	if (!strncasecmp(s, "TEXT", 4))
		*isint = 0, s += 4;
	else if (!strncasecmp(s, "BIGINT", 6))
		*isint = 1, s += 6;
	else
		return 0;
	for (; *s == ' '; s++)
		;
	return *s == ')' ? (size_t)(s + 1 - p) : 0;
}

/* db.h's SQL to MySQL's: each $n, and each CAST($n AS TEXT|BIGINT) whole, becomes '?' (the
 * cast is the bind's type), outside quotes and comments; the placeholders' parameters into
 * s->idx and s->isint. */
static char *my_rewrite(const char *sql, struct my_stmt *s)
{
	size_t len = strlen(sql), cap = 16, k = 0;
	char *out = malloc(len + 1);
	uint16_t *idx = malloc(cap * sizeof *idx);
	uint8_t *isint = malloc(cap);
	size_t o = 0, want = 0;
	for (const char *p = sql; out && idx && isint && *p;) {
		size_t n = 0, skip = 0;
		int asint = 0;
		if (*p == '\'' || *p == '"' || *p == '`') {
			const char *q = strchr(p + 1, *p);
			skip = q ? (size_t)(q + 1 - p) : strlen(p);
		} else if (p[0] == '-' && p[1] == '-') {
			skip = strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *q = strstr(p + 2, "*/");
			skip = q ? (size_t)(q + 2 - p) : strlen(p);
		} else if ((p == sql || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
			   (skip = cast_at(p, &n, &asint)) != 0) {
		} else if (*p == '$' && isdigit((unsigned char)p[1])) {
			char *end;
			n = strtoul(p + 1, &end, 10);
			skip = (size_t)(end - p);
		} else {
			skip = 1;
		}
		if (n) { /* a placeholder */
			if (n > MY_PARAMS_MAX || k >= MY_PARAMS_MAX)
				goto fail;
			if (k == cap) {
				cap *= 2;
				uint16_t *ni = realloc(idx, cap * sizeof *idx);
				if (ni)
					idx = ni;
				uint8_t *nb = ni ? realloc(isint, cap) : NULL;
				if (!nb)
					goto fail;
				isint = nb;
			}
			idx[k] = (uint16_t)(n - 1);
			isint[k++] = (uint8_t)asint;
			want = n > want ? n : want;
			out[o++] = '?';
		} else {
			memcpy(out + o, p, skip);
			o += skip;
		}
		p += skip;
	}
	if (!out || !idx || !isint)
		goto fail;
	out[o] = 0;
	s->idx = idx;
	s->isint = isint;
	s->nph = k;
	s->want = want;
	return out;
fail:
	free(out);
	free(idx);
	free(isint);
	return NULL;
}

static int my_prepare(struct dbmy *m, const char *sql, struct my_stmt **out, char *err)
{
	struct my_stmt *slot = &m->cache[0];
	for (size_t i = 0; i < DB_STMT_CACHE; i++) {
		struct my_stmt *c = &m->cache[i];
		if (c->key == sql && c->sql && !strcmp(c->sql, sql)) {
			c->used = ++m->clock;
			*out = c;
			return 0;
		}
		if (c->used < slot->used)
			slot = c;
	}
	struct my_stmt s = {.key = sql};
	char *rw = my_rewrite(sql, &s);
	s.sql = strdup(sql);
	s.st = rw && s.sql ? mysql_stmt_init(m->c) : NULL;
	if (!s.st) {
		free(rw);
		free(s.sql);
		free(s.idx);
		free(s.isint);
		char shown[DB_SQL_SHOWN + 4];
		return as_fail(err, AS_ENOMEM, "out of memory preparing a statement (or over %d parameters in %s)",
			       MY_PARAMS_MAX, db_sql_shown(sql, shown));
	}
	int bad = mysql_stmt_prepare(s.st, rw, strlen(rw));
	free(rw);
	if (bad) {
		int rc = my_fail(m, mysql_stmt_errno(s.st), mysql_stmt_error(s.st), sql, err);
		mysql_stmt_close(s.st);
		free(s.sql);
		free(s.idx);
		free(s.isint);
		return rc;
	}
	if (slot->st)
		mysql_stmt_close(slot->st);
	free(slot->sql);
	free(slot->idx);
	free(slot->isint);
	*slot = s;
	slot->used = ++m->clock;
	*out = slot;
	return 0;
}

static int grow_params(struct dbmy *m, size_t n)
{
	if (n <= m->pcap)
		return 0;
	MYSQL_BIND *pb = realloc(m->pb, n * sizeof *pb);
	if (pb)
		m->pb = pb;
	long long *pv = pb ? realloc(m->pv, n * sizeof *pv) : NULL;
	if (pv)
		m->pv = pv;
	unsigned long *pl = pv ? realloc(m->pl, n * sizeof *pl) : NULL;
	if (!pl)
		return AS_ENOMEM;
	m->pl = pl;
	m->pcap = n;
	return 0;
}

static int bind_params(struct dbmy *m, struct my_stmt *s, const char *const *params, size_t n, const char *sql,
		       char *err)
{
	char shown[DB_SQL_SHOWN + 4];
	if (s->want != n)
		return as_fail(err, AS_EINVAL, "statement takes %zu parameters, %zu given (in %s)", s->want, n,
			       db_sql_shown(sql, shown));
	if (grow_params(m, s->nph ? s->nph : 1) < 0)
		return as_fail(err, AS_ENOMEM, "out of memory binding %zu parameters", s->nph);
	memset(m->pb, 0, s->nph * sizeof *m->pb);
	for (size_t k = 0; k < s->nph; k++) {
		const char *v = params[s->idx[k]];
		MYSQL_BIND *b = &m->pb[k];
		if (!v) {
			b->buffer_type = MYSQL_TYPE_NULL;
		} else if (s->isint[k]) {
			char *end;
			errno = 0;
			m->pv[k] = strtoll(v, &end, 10);
			if (!*v || *end || errno)
				return as_fail(err, AS_EINVAL, "parameter $%u \"%.24s\" is not an integer (in %s)",
					       (unsigned)s->idx[k] + 1, v, db_sql_shown(sql, shown));
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &m->pv[k];
		} else {
			m->pl[k] = strlen(v);
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = (void *)v;
			b->buffer_length = m->pl[k];
			b->length = &m->pl[k];
		}
	}
	if (s->nph && mysql_stmt_bind_param(s->st, m->pb))
		return my_fail(m, mysql_stmt_errno(s->st), mysql_stmt_error(s->st), sql, err);
	return 0;
}

/* One result's columns, each a text buffer grown to its longest value. */
struct my_cols {
	MYSQL_BIND *b;
	char **buf;
	const char **cols;
	unsigned long *len;
	my_bool *null, *trunc;
	unsigned n;
};

static void cols_free(struct my_cols *r)
{
	for (unsigned i = 0; r->buf && i < r->n; i++)
		free(r->buf[i]);
	free(r->b);
	free(r->buf);
	free(r->cols);
	free(r->len);
	free(r->null);
	free(r->trunc);
}

static int cols_init(struct my_cols *r, unsigned n)
{
	r->n = n;
	r->b = calloc(n, sizeof *r->b);
	r->buf = calloc(n, sizeof *r->buf);
	r->cols = calloc(n, sizeof *r->cols);
	r->len = calloc(n, sizeof *r->len);
	r->null = calloc(n, sizeof *r->null);
	r->trunc = calloc(n, sizeof *r->trunc);
	if (!r->b || !r->buf || !r->cols || !r->len || !r->null || !r->trunc)
		return AS_ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if (!(r->buf[i] = malloc(MY_COL_BUF)))
			return AS_ENOMEM;
		r->b[i].buffer_type = MYSQL_TYPE_STRING;
		r->b[i].buffer = r->buf[i];
		r->b[i].buffer_length = MY_COL_BUF - 1; /* room for the NUL */
		r->b[i].length = &r->len[i];
		r->b[i].is_null = &r->null[i];
		r->b[i].error = &r->trunc[i];
	}
	return 0;
}

/* The row just fetched: columns longer than their buffers fetched again into larger ones. */
static int cols_complete(struct dbmy *m, MYSQL_STMT *st, struct my_cols *r, const char *sql, char *err)
{
	int rebind = 0;
	for (unsigned i = 0; i < r->n; i++) {
		if (r->null[i]) {
			r->cols[i] = NULL;
			continue;
		}
		if (r->len[i] > r->b[i].buffer_length) {
			char *nb = realloc(r->buf[i], r->len[i] + 1);
			if (!nb)
				return as_fail(err, AS_ENOMEM, "out of memory reading a column of %lu bytes",
					       r->len[i]);
			r->buf[i] = nb;
			r->b[i].buffer = nb;
			r->b[i].buffer_length = r->len[i];
			if (mysql_stmt_fetch_column(st, &r->b[i], i, 0))
				return my_fail(m, mysql_stmt_errno(st), mysql_stmt_error(st), sql, err);
			rebind = 1;
		}
		r->buf[i][r->len[i]] = 0;
		r->cols[i] = r->buf[i];
	}
	if (rebind && mysql_stmt_bind_result(st, r->b))
		return my_fail(m, mysql_stmt_errno(st), mysql_stmt_error(st), sql, err);
	return 0;
}

static int my_rows(struct dbmy *m, MYSQL_STMT *st, MYSQL_RES *meta, db_row_fn row, void *ctx, const char *sql,
		   char *err)
{
	struct my_cols r = {0};
	int rc = 0;
	if (cols_init(&r, mysql_num_fields(meta)) < 0)
		rc = as_fail(err, AS_ENOMEM, "out of memory reading %u columns", r.n);
	else if (mysql_stmt_bind_result(st, r.b) || mysql_stmt_store_result(st))
		rc = my_fail(m, mysql_stmt_errno(st), mysql_stmt_error(st), sql, err);
	while (rc == 0) {
		int f = mysql_stmt_fetch(st);
		if (f == MYSQL_NO_DATA)
			break;
		if (f == 1) {
			rc = my_fail(m, mysql_stmt_errno(st), mysql_stmt_error(st), sql, err);
			break;
		}
		rc = cols_complete(m, st, &r, sql, err);
		if (rc == 0 && row)
			rc = row(ctx, r.cols, r.n);
	}
	cols_free(&r);
	return rc;
}

int dbmy_run(struct dbmy *m, const char *sql, const char *const *params, size_t n, int64_t *changes, db_row_fn row,
	     void *ctx, char *err)
{
	if (!m->c)
		return as_fail(err, AS_EIO, MY_TEXT_PREFIX ": not connected (reconnect failed)");
	struct my_stmt *s = NULL;
	GUARD(my_prepare(m, sql, &s, err));
	GUARD(bind_params(m, s, params, n, sql, err));
	if (mysql_stmt_execute(s->st)) {
		int rc = my_fail(m, mysql_stmt_errno(s->st), mysql_stmt_error(s->st), sql, err);
		mysql_stmt_reset(s->st);
		return rc;
	}
	int rc = 0;
	MYSQL_RES *meta = mysql_stmt_result_metadata(s->st);
	if (meta) {
		rc = my_rows(m, s->st, meta, row, ctx, sql, err);
		mysql_free_result(meta);
	} else if (mysql_stmt_errno(s->st)) {
		rc = my_fail(m, mysql_stmt_errno(s->st), mysql_stmt_error(s->st), sql, err);
	} else if (changes) {
		my_ulonglong a = mysql_stmt_affected_rows(s->st);
		*changes = a == (my_ulonglong)-1 ? 0 : (int64_t)a;
	}
	mysql_stmt_free_result(s->st);
	if (rc < 0)
		mysql_stmt_reset(s->st);
	return rc;
}

/* Several statements separated by ';' outside quotes, one query each (the connection does
 * not take several at once). */
int dbmy_script(struct dbmy *m, const char *sql, char *err)
{
	if (!m->c)
		return as_fail(err, AS_EIO, MY_TEXT_PREFIX ": not connected (reconnect failed)");
	const char *p = sql;
	while (*p) {
		const char *e = p;
		while (*e && *e != ';') {
			if (*e == '\'' || *e == '"' || *e == '`') {
				const char *q = strchr(e + 1, *e);
				e = q ? q + 1 : e + strlen(e);
			} else {
				e++;
			}
		}
		size_t n = (size_t)(e - p);
		size_t lead = strspn(p, " \t\r\n");
		if (lead < n) {
			if (mysql_real_query(m->c, p, n))
				return my_fail(m, mysql_errno(m->c), mysql_error(m->c), p, err);
			MYSQL_RES *r = mysql_store_result(m->c);
			mysql_free_result(r);
		}
		p = *e ? e + 1 : e;
	}
	return 0;
}

void dbmy_rollback(struct dbmy *m)
{
	if (m->c)
		mysql_rollback(m->c);
}
