/* Unit tests for ledger/cosign_store.c on a real ledger in a temporary directory: the newest
 * periodic checkpoint found, cosignature lines appended to it (stored note and DIR/checkpoint),
 * one line per witness (the newer replaces the older), and the refusals: another body, the
 * log key's key ID, no checkpoint at that size. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "tests/unit/scratch.h"

static char dir[64], ldir[128];

static struct ledger *open_ledger(void)
{
	struct ledger_opts o = {.map_size = (size_t)64 << 20};
	struct ledger *l = NULL;
	char err[AS_ERRLEN] = "";
	snprintf(dir, sizeof dir, "/tmp/assent-cosign-test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(ldir, sizeof ldir, "%s/ledger", dir);
	if (ledger_open(ldir, &o, &l, err) != 0)
		fail_msg("ledger_open: %s", err);
	return l;
}

/* "\xe2\x80\x94 NAME BASE64(keyid || time || 64 bytes of fill)\n" */
static void cosig_line(struct ledger_cosig *c, struct buf *line, const char *name, uint8_t id0, uint8_t fill)
{
	uint8_t blob[76];
	memset(blob, fill, sizeof blob);
	blob[0] = id0, blob[1] = 2, blob[2] = 3, blob[3] = 4;
	buf_init(line, 512);
	assert_int_equal(buf_printf(line, NOTE_SIG_PREFIX "%s ", name), 0);
	assert_int_equal(b64_encode(blob, sizeof blob, line), 0);
	assert_int_equal(buf_putc(line, '\n'), 0);
	assert_int_equal(buf_putc(line, 0), 0);
	c->name = name;
	memcpy(c->keyid, blob, 4);
	c->line = (const char *)line->p;
}

static size_t count(const struct buf *b, const char *s)
{
	size_t n = 0;
	for (const char *p = (const char *)b->p;
	     (p = memmem(p, b->len - (size_t)(p - (const char *)b->p), s, strlen(s))); p++)
		n++;
	return n;
}

static void test_cosign_appends_and_replaces(void **st)
{
	(void)st;
	struct ledger *l = open_ledger();
	char err[AS_ERRLEN] = "", path[200];
	uint64_t size = 0;
	struct buf note, file, line, line2;
	buf_init(&note, CKPT_MAX);
	assert_int_equal(ledger_periodic(l, &size, &note, err), 0);
	assert_true(size >= 1);
	size_t blen = (size_t)((uint8_t *)memmem(note.p, note.len, "\n\n", 2) - note.p) + 1;
	char *body = strndup((const char *)note.p, blen);

	struct ledger_cosig c;
	cosig_line(&c, &line, "w.example/1", 9, 0xaa);
	assert_int_equal(ledger_cosign(l, size, body, blen, &c, 1, err), 0);
	assert_int_equal(ledger_periodic(l, &size, &note, err), 0);
	assert_int_equal(count(&note, (const char *)line.p), 1);
	struct checkpoint cp;
	assert_int_equal(ckpt_parse(note.p, note.len, &cp, err), 0);
	snprintf(path, sizeof path, "%s/checkpoint", ldir);
	assert_int_equal(file_read(path, CKPT_MAX, &file, err), 0);
	assert_int_equal(file.len, note.len);
	assert_memory_equal(file.p, note.p, note.len);
	buf_free(&file);

	/* the same witness again: its newer line replaces the older */
	cosig_line(&c, &line2, "w.example/1", 9, 0xbb);
	assert_int_equal(ledger_cosign(l, size, body, blen, &c, 1, err), 0);
	assert_int_equal(ledger_periodic(l, &size, &note, err), 0);
	assert_int_equal(count(&note, (const char *)line.p), 0);
	assert_int_equal(count(&note, (const char *)line2.p), 1);
	assert_int_equal(count(&note, NOTE_SIG_PREFIX "w.example/1 "), 1);

	/* refused: another body, the log key's key ID, a size with no checkpoint */
	body[blen - 2] ^= 1;
	assert_int_equal(ledger_cosign(l, size, body, blen, &c, 1, err), AS_ECORRUPT);
	body[blen - 2] ^= 1;
	assert_int_equal(ledger_cosign(l, size + 100, body, blen, &c, 1, err), AS_ENOTFOUND);
	struct rd r, ln;
	rd_init(&r, note.p + blen + 1, note.len - blen - 1);
	assert_int_equal(rd_line(&r, &ln), 0); /* the log's own line: its key ID */
	uint8_t blob[128];
	size_t bl = 0;
	const char *sp = memchr(ln.p + 4, ' ', ln.len - 4);
	assert_non_null(sp);
	assert_int_equal(b64_decode(sp + 1, ln.len - (size_t)(sp + 1 - (const char *)ln.p), blob, sizeof blob, &bl), 0);
	memcpy(c.keyid, blob, 4);
	assert_int_equal(ledger_cosign(l, size, body, blen, &c, 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "log key's key ID"));

	free(body);
	buf_free(&note);
	buf_free(&line);
	buf_free(&line2);
	ledger_close(l);
	scratch_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cosign_appends_and_replaces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
