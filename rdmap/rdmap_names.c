/* SPDX-License-Identifier: MIT */
/*
 * Names for opcodes and Terminate reasons (RFC 5040 §4.8, RFC 5041 §7, RFC
 * 5044 §8, RFC 6581), shared by logs and ddpdump.  The RDMAP, DDP tagged, DDP
 * untagged and LLP tables stay separate, as on the wire.
 */
#include "config.h"

#include <stddef.h>

#include <esock/rdmap.h>

#include "rdmap/rdmap_internal.h"

struct code_name {
	uint8_t code;
	const char *name;
};

static const struct code_name rdmap_codes[] = {
	{ 0x00, "invalid STag" },
	{ 0x01, "base or bounds violation" },
	{ 0x02, "access rights violation" },
	{ 0x03, "STag not associated with RDMAP stream" },
	{ 0x04, "TO wrap" },
	{ 0x05, "invalid RDMAP version" },
	{ 0x06, "unexpected opcode" },
	{ 0x07, "catastrophic error, localized to RDMAP stream" },
	{ 0x08, "catastrophic error, global" },
	{ 0x09, "STag cannot be invalidated" },
	{ 0xff, "unspecified error" },
};

static const struct code_name ddp_tagged_codes[] = {
	{ 0x00, "invalid STag" },
	{ 0x01, "base or bounds violation" },
	{ 0x02, "STag not associated with DDP stream" },
	{ 0x03, "TO wrap" },
	{ 0x04, "invalid DDP version" },
};

static const struct code_name ddp_untagged_codes[] = {
	{ 0x01, "invalid QN" },
	{ 0x02, "invalid MSN - no buffer available" },
	{ 0x03, "invalid MSN - MSN range is not valid" },
	{ 0x04, "invalid MO" },
	{ 0x05, "DDP message too long for available buffer" },
	{ 0x06, "invalid DDP version" },
};

static const struct code_name llp_codes[] = {
	{ 0x01, "TCP connection closed, terminated or lost" },
	{ 0x02, "MPA CRC mismatch" },
	{ 0x03, "MPA marker and ULPDU_Length disagree" },
	{ 0x04, "invalid MPA Request or Reply frame" },
	{ 0x05, "local catastrophic error" },
	{ 0x06, "insufficient IRD resources" },
	{ 0x07, "no matching RTR option" },
};

static const struct code_name catastrophic_codes[] = {
	{ 0x00, "local catastrophic error" },
};


static const char *lookup(const struct code_name *t, size_t n, uint8_t code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

/* The code table that applies to (layer, etype), or NULL. */
static const struct code_name *table_for(uint8_t layer, uint8_t etype, size_t *n)
{
	switch (layer) {
	case ESOCK_TERM_LAYER_RDMAP:
		if (etype > ESOCK_TERM_RDMAP_ETYPE_OPERATION)
			return NULL;
		*n = sizeof(rdmap_codes) / sizeof(rdmap_codes[0]);
		return rdmap_codes;
	case ESOCK_TERM_LAYER_DDP:
		if (etype == ESOCK_TERM_DDP_ETYPE_CATASTROPHIC) {
			*n = 1;
			return catastrophic_codes;
		}
		if (etype == ESOCK_TERM_DDP_ETYPE_TAGGED) {
			*n = sizeof(ddp_tagged_codes) / sizeof(ddp_tagged_codes[0]);
			return ddp_tagged_codes;
		}
		if (etype == ESOCK_TERM_DDP_ETYPE_UNTAGGED) {
			*n = sizeof(ddp_untagged_codes) / sizeof(ddp_untagged_codes[0]);
			return ddp_untagged_codes;
		}
		return NULL;
	case ESOCK_TERM_LAYER_LLP:
		if (etype != ESOCK_TERM_LLP_ETYPE_MPA)
			return NULL;
		*n = sizeof(llp_codes) / sizeof(llp_codes[0]);
		return llp_codes;
	default:
		return NULL;
	}
}

bool esock_rdmap_term_known(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	size_t n = 0;
	const struct code_name *t = table_for(layer, etype, &n);

	return t && lookup(t, n, ecode);
}

ESOCK_EXPORT const char *esock_term_str(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	size_t n = 0;
	const struct code_name *t = table_for(layer, etype, &n);
	const char *s = t ? lookup(t, n, ecode) : NULL;

	return s ? s : "unknown error code";
}

ESOCK_EXPORT const char *esock_term_layer_name(uint8_t layer)
{
	static const char *const names[] = { "RDMAP", "DDP", "LLP (MPA)" };

	return layer < 3 ? names[layer] : "unknown layer";
}

ESOCK_EXPORT const char *esock_term_etype_name(uint8_t layer, uint8_t etype)
{
	static const char *const rdmap[] = { "local catastrophic", "remote protection",
					     "remote operation" };
	static const char *const ddp[] = { "local catastrophic", "tagged buffer", "untagged buffer",
					   "reserved for LLP" };

	if (layer == ESOCK_TERM_LAYER_RDMAP && etype < 3)
		return rdmap[etype];
	if (layer == ESOCK_TERM_LAYER_DDP && etype < 4)
		return ddp[etype];
	if (layer == ESOCK_TERM_LAYER_LLP && etype == ESOCK_TERM_LLP_ETYPE_MPA)
		return "MPA";
	return "unknown error type";
}

ESOCK_EXPORT const char *esock_rdmap_opcode_name(uint8_t opcode)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(opcode);

	return oi ? oi->name : "reserved opcode";
}

ESOCK_EXPORT const char *esock_rdmap_atomic_name(uint8_t op)
{
	if (op == ESOCK_RDMAP_ATOMIC_FETCH_ADD)
		return "FetchAdd";
	if (op == ESOCK_RDMAP_ATOMIC_CMP_SWAP)
		return "CmpSwap";
	return "reserved atomic operation";
}
