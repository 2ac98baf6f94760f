/* libcbor as an independent oracle for our strict decoder (common/cbor.c): an item
 * we accept must be one libcbor's cbor_load reads as the same item, type by type and
 * value by value, in the same order. Only ever handed bytes our decoder accepted, so
 * every length libcbor allocates for is bounded by the input (NOTES.md: cbor_load
 * allocates whatever the input declares). Included by fuzz/ledger_entry.c and
 * tests/bench/cbor_bench.c; the product links no libcbor (docs/hacking.md, "Why it is built this way"). */
#ifndef ASSENT_CBOR_ORACLE_H
#define ASSENT_CBOR_ORACLE_H

#include <cbor.h>
#include <string.h>

#include "common/cbor.h"

/* The width libcbor gives an integer read in its shortest form (the only form we accept). */
static cbor_int_width cbor_oracle_width(uint64_t u)
{
	return u <= 0xff ? CBOR_INT_8 : u <= 0xffff ? CBOR_INT_16 : u <= 0xffffffffu ? CBOR_INT_32 : CBOR_INT_64;
}

static int cbor_oracle_str(const struct cv *v, const cbor_item_t *it, const char **why)
{
	int bytes = v->t == CV_BYTES;
	if (bytes ? !cbor_isa_bytestring(it) || !cbor_bytestring_is_definite(it)
		  : !cbor_isa_string(it) || !cbor_string_is_definite(it)) {
		*why = bytes ? "not a definite byte string" : "not a definite text string";
		return 0;
	}
	size_t n = bytes ? cbor_bytestring_length(it) : cbor_string_length(it);
	const uint8_t *p = bytes ? cbor_bytestring_handle(it) : cbor_string_handle(it);
	if (n != v->n || (n && memcmp(p, v->s, n) != 0)) {
		*why = "string of another length or other bytes";
		return 0;
	}
	return 1;
}

/* 1 when libcbor's item says exactly what ours says; 0 with *why naming the first
 * difference (depth-first, so the innermost item that differs). */
static int cbor_oracle_same(const struct cv *v, const cbor_item_t *it, const char **why)
{
	switch (v->t) {
	case CV_UINT:
	case CV_NINT:
		if (v->t == CV_UINT ? !cbor_isa_uint(it) : !cbor_isa_negint(it)) {
			*why = "integer of another sign or not an integer";
			return 0;
		}
		if (cbor_get_int(it) != v->u || cbor_int_get_width(it) != cbor_oracle_width(v->u)) {
			*why = "integer of another value or width";
			return 0;
		}
		return 1;
	case CV_BYTES:
	case CV_TEXT:
		return cbor_oracle_str(v, it, why);
	case CV_ARRAY:
		if (!cbor_isa_array(it) || !cbor_array_is_definite(it) || cbor_array_size(it) != v->n) {
			*why = "not a definite array of as many items";
			return 0;
		}
		for (size_t i = 0; i < v->n; i++)
			if (!cbor_oracle_same(&v->items[i], cbor_array_handle(it)[i], why))
				return 0;
		return 1;
	case CV_MAP:
		if (!cbor_isa_map(it) || !cbor_map_is_definite(it) || cbor_map_size(it) != v->n) {
			*why = "not a definite map of as many pairs";
			return 0;
		}
		for (size_t i = 0; i < v->n; i++) { /* both keep the input's order, which is canonical */
			const struct cbor_pair *p = &cbor_map_handle(it)[i];
			if (!cbor_oracle_same(&v->items[2 * i], p->key, why) ||
			    !cbor_oracle_same(&v->items[2 * i + 1], p->value, why))
				return 0;
		}
		return 1;
	case CV_FALSE:
	case CV_TRUE:
	case CV_NULL: {
		uint8_t want = v->t == CV_FALSE ? CBOR_CTRL_FALSE : v->t == CV_TRUE ? CBOR_CTRL_TRUE : CBOR_CTRL_NULL;
		if (!cbor_isa_float_ctrl(it) || !cbor_float_ctrl_is_ctrl(it) || cbor_ctrl_value(it) != want) {
			*why = "not the same simple value (false, true, null)";
			return 0;
		}
		return 1;
	}
	}
	*why = "a value type the oracle does not know";
	return 0;
}

/* Load data with libcbor and compare with v, our decoding of the same bytes. Returns
 * 1 when they agree; 0 with *why saying what libcbor did differently. */
static int cbor_oracle_check(const struct cv *v, const uint8_t *data, size_t size, const char **why)
{
	struct cbor_load_result res;
	cbor_item_t *it = cbor_load(data, size, &res);
	int same = 0;
	if (!it || res.error.code != CBOR_ERR_NONE)
		*why = "cbor_load refuses it";
	else if (res.read != size)
		*why = "cbor_load reads one item of another length";
	else
		same = cbor_oracle_same(v, it, why);
	if (it)
		cbor_decref(&it);
	return same;
}

#endif
