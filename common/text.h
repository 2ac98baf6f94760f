/* What text from agents may hold, and how it is shown to people. One definition of the
 * character classes, used by the mcp worker to validate, by the signer to check frames
 * (gateway/proto/action.c) and by the CLI to show text (the page has the same rules in
 * gateway/web/app.js). Internal to assent; not installed. */
#ifndef ASSENT_TEXT_H
#define ASSENT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define TEXT_BAD_BYTE 0xffffffffu /* text_cp: not a UTF-8 character (one byte consumed) */

/* The code point at s[i] (i < n) and its length in bytes; TEXT_BAD_BYTE with length 1
 * for a byte that does not start a well-formed UTF-8 character. */
uint32_t text_cp(const uint8_t *s, size_t n, size_t i, size_t *len);

/* Refused in what agents send (message, options, names, audience): C0 controls, DEL,
 * C1 controls, the bidirectional embeddings, overrides and isolates (U+202A-202E,
 * U+2066-2069). Tab and newline are allowed only where a field is multi-line. */
int text_refused_cp(uint32_t cp);

/* Neutralised wherever text is shown: everything text_refused_cp names, and the
 * characters that are invisible or reorder text without being refused: LRM, RLM, ALM,
 * zero-width ones (U+200B-200F, U+2060-2064, U+FEFF) and U+2028/2029. */
int text_hidden_cp(uint32_t cp);

/* Length of the longest prefix of s[0..n) of at most max bytes that does not end inside
 * a UTF-8 character. */
size_t text_cut(const char *s, size_t n, size_t max);

/* Character classes of frame fields (gateway/proto/action.h). */
enum text_class {
	TEXT_ANY = 0,	/* any UTF-8 (a context: the exact operation; neutralised when shown) */
	TEXT_MULTILINE, /* no refused character but tab, newline, and \r before \n */
	TEXT_LINE,	/* no refused character at all */
	TEXT_TOKEN,	/* [A-Za-z0-9._:/-] only (an audience) */
};
/* 0 when s[0..n) is well-formed UTF-8 of class c; else AS_EINVAL with the offending
 * byte offset and code point (TEXT_BAD_BYTE for a bad byte) in *at and *cp. */
int text_check(enum text_class c, const char *s, size_t n, size_t *at, uint32_t *cp);

/* Append s[0..n) to out as it may be shown on a terminal or page: each character
 * text_hidden_cp names is written as \uXXXX (a byte that is not UTF-8 as \xNN) between
 * mark_on and mark_off (for instance reverse video; "" for none), newline and tab kept
 * when keep_lines. *marked (if not NULL) is increased by the number of characters
 * neutralised. Returns 0, or AS_ETOOBIG when out's maximum is reached (out then holds
 * what fitted). */
int text_neutralise(const char *s, size_t n, int keep_lines, const char *mark_on, const char *mark_off, struct buf *out,
		    size_t *marked);

#endif
