/* consist_tool: ledger/merkle.c's consistency proofs over a synthetic tree, line by line on
 * standard input, for tests/scripts/rfc9162_check.py to compare with its own RFC 9162 code.
 * Leaf i is the leaf hash of i as 8 big-endian bytes. Commands, one a line:
 *   root N                         -> hex root of the first N leaves
 *   prove M N                      -> the proof, hex hashes separated by spaces ("-": none)
 *   verify M N OLDHEX NEWHEX P|-   -> ok | bad  (P: hex hashes joined with ',') */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "ledger/merkle.h"

#define TOOL_LEAVES (1u << 16)

static uint8_t (*leaves)[32];

static void print_hex(const uint8_t h[32])
{
	char hex[65];
	hex_encode(h, 32, hex);
	fputs(hex, stdout);
}

static int parse_path(char *s, uint8_t (*path)[32], size_t *np)
{
	*np = 0;
	if (!strcmp(s, "-"))
		return 0;
	for (char *t = s; t;) {
		char *comma = strchr(t, ',');
		size_t len = comma ? (size_t)(comma - t) : strlen(t);
		if (*np == MERKLE_MAX_CONSISTENCY || hex_decode(t, len, path[*np], 32) != 0)
			return -1;
		(*np)++;
		t = comma ? comma + 1 : NULL;
	}
	return 0;
}

static void verify_line(char *args)
{
	unsigned long long m, n;
	char oh[80], nh[80], ps[MERKLE_MAX_CONSISTENCY * 66];
	uint8_t o[32], r[32], path[MERKLE_MAX_CONSISTENCY][32];
	size_t np;
	if (sscanf(args, "%llu %llu %79s %79s %4223s", &m, &n, oh, nh, ps) != 5 ||
	    hex_decode(oh, strlen(oh), o, 32) != 0 || hex_decode(nh, strlen(nh), r, 32) != 0 ||
	    parse_path(ps, path, &np) != 0) {
		puts("bad");
		return;
	}
	puts(merkle_verify_consistency(m, n, o, r, (const uint8_t(*)[32])path, np) == 0 ? "ok" : "bad");
}

int main(void)
{
	leaves = malloc((size_t)TOOL_LEAVES * 32);
	if (!leaves)
		return 2;
	for (uint64_t i = 0; i < TOOL_LEAVES; i++) {
		uint8_t b[8];
		be64_put(b, i);
		merkle_leaf_hash(b, 8, leaves[i]);
	}
	char line[8192];
	while (fgets(line, sizeof line, stdin)) {
		unsigned long long m, n;
		uint8_t path[MERKLE_MAX_CONSISTENCY][32];
		size_t np;
		if (sscanf(line, "root %llu", &n) == 1 && n >= 1 && n <= TOOL_LEAVES) {
			struct merkle t;
			merkle_init(&t);
			for (uint64_t i = 0; i < n; i++)
				merkle_append(&t, leaves[i]);
			uint8_t r[32];
			merkle_root(&t, r);
			print_hex(r);
			putchar('\n');
		} else if (sscanf(line, "prove %llu %llu", &m, &n) == 2 && n <= TOOL_LEAVES &&
			   merkle_consistency_proof((const uint8_t(*)[32])leaves, m, n, path, &np) == 0) {
			for (size_t i = 0; i < np; i++) {
				if (i)
					putchar(' ');
				print_hex(path[i]);
			}
			puts(np ? "" : "-");
		} else if (!strncmp(line, "verify ", 7)) {
			verify_line(line + 7);
		} else {
			puts("error");
		}
		fflush(stdout);
	}
	free(leaves);
	return 0;
}
