/* SPDX-License-Identifier: MIT */
/* Internal RDMAP helpers shared by the rdmap/ files. */
#ifndef ESOCK_RDMAP_INTERNAL_H
#define ESOCK_RDMAP_INTERNAL_H

#include <esock/rdmap.h>

/* Terminate header (after the DDP header): decode/encode, in rdmap_term.c. */
ssize_t esock_rdmap_term_hdr_decode(struct esock_rdmap_term *tm, const uint8_t *p, size_t len, uint8_t order);
ssize_t esock_rdmap_term_hdr_encode(const struct esock_rdmap_term *tm, uint8_t *p, size_t cap);

/* RFC 7306 headers, in rdmap_ext.c. */
void esock_rdmap_atomic_req_decode(struct esock_rdmap_atomic_req *a, const uint8_t *p);
void esock_rdmap_atomic_req_encode(const struct esock_rdmap_atomic_req *a, uint8_t *p);
void esock_rdmap_atomic_resp_decode(struct esock_rdmap_atomic_resp *a, const uint8_t *p);
void esock_rdmap_atomic_resp_encode(const struct esock_rdmap_atomic_resp *a, uint8_t *p);

/* True when (layer, etype, ecode) is a defined Terminate reason (rdmap_names.c). */
bool esock_rdmap_term_known(uint8_t layer, uint8_t etype, uint8_t ecode);

#endif
