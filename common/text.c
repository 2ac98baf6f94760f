/* Character classes of agents' text and the neutraliser the CLI shows text through
 * (see text.h). */
#include "common/text.h"

#include <string.h>

uint32_t text_cp(const uint8_t *s, size_t n, size_t i, size_t *len)
{
	uint8_t c = s[i];
	size_t l;
	uint32_t cp, min;
	*len = 1;
	if (c < 0x80)
		return c;
	if (c >= 0xc2 && c <= 0xdf)
		l = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		l = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		l = 4, cp = c & 0x07, min = 0x10000;
	else
		return TEXT_BAD_BYTE;
	if (n - i < l)
		return TEXT_BAD_BYTE;
	for (size_t k = 1; k < l; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			return TEXT_BAD_BYTE;
		cp = cp << 6 | (s[i + k] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return TEXT_BAD_BYTE;
	*len = l;
	return cp;
}

size_t text_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

int text_refused_cp(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

int text_hidden_cp(uint32_t cp)
{
	/* Plus every default-ignorable or format character a terminal or browser draws as
	 * nothing: soft hyphen, combining grapheme joiner, Hangul fillers, Mongolian and
	 * other variation selectors, interlinear annotation, and the tag characters, which
	 * can spell hidden ASCII ("ASCII smuggling"). */
	return text_refused_cp(cp) || cp == 0x00ad || cp == 0x034f || cp == 0x061c || cp == 0x115f || cp == 0x1160 ||
	       cp == 0x17b4 || cp == 0x17b5 || (cp >= 0x180b && cp <= 0x180f) || (cp >= 0x200b && cp <= 0x200f) ||
	       cp == 0x2028 || cp == 0x2029 || (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3164 ||
	       (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || cp == 0xffa0 || (cp >= 0xfff0 && cp <= 0xfffb) ||
	       (cp >= 0x1bca0 && cp <= 0x1bca3) || (cp >= 0x1d173 && cp <= 0x1d17a) || (cp >= 0xe0000 && cp <= 0xe0fff);
}

static int token_char(uint32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == ':' || c == '/' || c == '-';
}

int text_check(enum text_class c, const char *s, size_t n, size_t *at, uint32_t *cp)
{
	const uint8_t *p = (const uint8_t *)s;
	for (size_t i = 0, l; i < n; i += l) {
		uint32_t x = text_cp(p, n, i, &l);
		int ok = x != TEXT_BAD_BYTE;
		if (ok && c == TEXT_TOKEN)
			ok = token_char(x);
		else if (ok && c != TEXT_ANY && text_refused_cp(x))
			ok = c == TEXT_MULTILINE &&
			     (x == '\t' || x == '\n' || (x == '\r' && i + 1 < n && p[i + 1] == '\n'));
		if (!ok) {
			*at = i;
			*cp = x;
			return AS_EINVAL;
		}
	}
	return 0;
}

int text_neutralise(const char *s, size_t n, int keep_lines, const char *mark_on, const char *mark_off, struct buf *out,
		    size_t *marked)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t start = 0; /* first byte not yet copied */
	for (size_t i = 0, l; i < n; i += l) {
		uint32_t x = text_cp(p, n, i, &l);
		if (x != TEXT_BAD_BYTE && !text_hidden_cp(x))
			continue;
		if (keep_lines && (x == '\n' || x == '\t' || (x == '\r' && i + 1 < n && p[i + 1] == '\n')))
			continue;
		GUARD(buf_put(out, p + start, i - start));
		GUARD(x == TEXT_BAD_BYTE ? buf_printf(out, "%s\\x%02x%s", mark_on, p[i], mark_off)
					 : buf_printf(out, x > 0xffff ? "%s\\u{%x}%s" : "%s\\u%04x%s", mark_on,
						      (unsigned)x, mark_off));
		start = i + l;
		if (marked)
			(*marked)++;
	}
	return buf_put(out, p + start, n - start);
}
