/* Tables for people: the `list` and `stats` commands print aligned columns, and --json
 * keeps the JSON for machines. */
#include "gateway/cli/cli.h"

#include <stdio.h>
#include <string.h>

#define TABLE_COLS 8
#define TABLE_CELL 200 /* a cell's characters shown; more is cut with "..." */

/* One cell's text: a string, a number, true/false as yes/no, an array joined with ",",
 * nothing as "-". */
static void cell(const json_t *v, char *out, size_t n)
{
	size_t at = 0, i;
	const json_t *x;
	out[0] = 0;
	if (json_is_string(v))
		snprintf(out, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		snprintf(out, n, "%s", json_is_true(v) ? "yes" : "no");
	else if (json_is_array(v))
		json_array_foreach(v, i, x)
		{
			char one[TABLE_CELL + 1];
			cell(x, one, sizeof one);
			int w = snprintf(out + at, n - at, "%s%s", at ? "," : "", one);
			at += w > 0 && (size_t)w < n - at ? (size_t)w : 0;
		}
	if (!out[0])
		snprintf(out, n, "-");
	if (strlen(out) >= TABLE_CELL) /* cut, and say so */
		memcpy(out + TABLE_CELL - 3, "...", 4);
}

void table_print(const json_t *rows, const char *const *keys, const char *const *heads, size_t ncols)
{
	size_t wid[TABLE_COLS] = {0}, i;
	const json_t *r;
	char c[TABLE_CELL + 4];
	ncols = ncols > TABLE_COLS ? TABLE_COLS : ncols;
	for (size_t k = 0; k < ncols; k++)
		wid[k] = strlen(heads[k]);
	json_array_foreach(rows, i, r)
	{
		for (size_t k = 0; k < ncols; k++) {
			cell(json_object_get(r, keys[k]), c, sizeof c);
			wid[k] = strlen(c) > wid[k] ? strlen(c) : wid[k];
		}
	}
	for (size_t k = 0; k < ncols; k++)
		printf("%-*s%s", k + 1 < ncols ? (int)wid[k] : 0, heads[k], k + 1 < ncols ? "  " : "\n");
	json_array_foreach(rows, i, r)
	{
		for (size_t k = 0; k < ncols; k++) {
			cell(json_object_get(r, keys[k]), c, sizeof c);
			printf("%-*s%s", k + 1 < ncols ? (int)wid[k] : 0, c, k + 1 < ncols ? "  " : "\n");
		}
	}
}
