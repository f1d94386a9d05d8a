/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the RDMAP whole-segment decoder (Terminate in every order,
 * RFC 7306 headers).  Properties: a decoded segment re-encodes to the same
 * header octets (RFC 7306 opcodes and Terminate included) and decodes again
 * to the same message; every error carries a Terminate reason; the header
 * length never exceeds the input.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <esock/rdmap.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct esock_rdmap_decode_opts o = { false, ESOCK_RDMAP_TERM_AUTO };
	struct esock_rdmap_msg m, m2;
	struct esock_term t = { 0 };
	uint8_t out[256];
	ssize_t hl, n;

	if (size < 1)
		return 0;
	o.no_rfc7306 = data[0] & 1;
	o.term_order = (uint8_t)((data[0] >> 1) % 3);
	data++;
	size--;
	hl = esock_rdmap_decode(&m, data, size, &o, &t);
	if (hl < 0) {
		if (!t.valid)
			abort();
		return 0;
	}
	if ((size_t)hl > size || m.payload != data + hl || m.payload_len != size - (size_t)hl)
		abort();
	n = esock_rdmap_hdr_encode(&m, out, sizeof(out));
	if (n != hl || memcmp(out, data, (size_t)n))
		abort();
	/* Decode the re-encoding with the order that was seen. */
	if (m.opcode == ESOCK_RDMAP_TERMINATE)
		o.term_order = m.u.term.order;
	if (esock_rdmap_decode(&m2, out, (size_t)n, &o, NULL) != n)
		abort();
	m2.payload = m.payload;
	m2.payload_len = m.payload_len;
	if (memcmp(&m, &m2, sizeof(m)))
		abort();
	return 0;
}
