/* SPDX-License-Identifier: MIT */
/*
 * RFC 7306 headers: Atomic Request (opcode 0xA, QN 1, 52 octets after the
 * untagged DDP header) and Atomic Response (0xB, QN 3, 12 octets).  The
 * Immediate Data header (8 octets) is handled in rdmap_hdr.c.
 */
#include "config.h"

#include <esock/rdmap.h>

#include "rdmap/rdmap_internal.h"
#include "util/byteorder.h"

void esock_rdmap_atomic_req_decode(struct esock_rdmap_atomic_req *a, const uint8_t *p)
{
	uint32_t w = esock_get_be32(p);

	a->op = w & 0xf;
	a->rsvd = w >> 4;
	a->req_id = esock_get_be32(p + 4);
	a->stag = esock_get_be32(p + 8);
	a->to = esock_get_be64(p + 12);
	a->swap_add = esock_get_be64(p + 20);
	a->swap_add_mask = esock_get_be64(p + 28);
	a->compare = esock_get_be64(p + 36);
	a->compare_mask = esock_get_be64(p + 44);
}

void esock_rdmap_atomic_req_encode(const struct esock_rdmap_atomic_req *a, uint8_t *p)
{
	esock_put_be32(p, (a->rsvd << 4) | (a->op & 0xfu));
	esock_put_be32(p + 4, a->req_id);
	esock_put_be32(p + 8, a->stag);
	esock_put_be64(p + 12, a->to);
	esock_put_be64(p + 20, a->swap_add);
	esock_put_be64(p + 28, a->swap_add_mask);
	esock_put_be64(p + 36, a->compare);
	esock_put_be64(p + 44, a->compare_mask);
}

void esock_rdmap_atomic_resp_decode(struct esock_rdmap_atomic_resp *a, const uint8_t *p)
{
	a->req_id = esock_get_be32(p);
	a->orig = esock_get_be64(p + 4);
}

void esock_rdmap_atomic_resp_encode(const struct esock_rdmap_atomic_resp *a, uint8_t *p)
{
	esock_put_be32(p, a->req_id);
	esock_put_be64(p + 4, a->orig);
}
