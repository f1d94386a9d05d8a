/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: MPA start-frame decode (as Request and as Reply) and responder
 * negotiation.  Properties: a decoded frame re-encodes to exactly the input
 * frame octets; a built Reply decodes again; errors always set the term.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/mpa.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, bool reply)
{
	struct esock_mpa_frame f, rep, again;
	struct esock_mpa_params par;
	struct esock_term t = { 0 };
	static const struct esock_mpa_policy pol = {
		.rev = 2, .crc = true, .p2p = true,
		.rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .ird = 4, .ord = 4
	};
	uint8_t out[ESOCK_MPA_FRAME_MAX];
	ssize_t n = esock_mpa_frame_decode(&f, reply, data, size, 0, &t);

	if (n < 0) {
		if (n != -ENODATA && !t.valid)
			abort();
		return;
	}
	if ((size_t)n > size || (size_t)n != esock_mpa_frame_need(data, size))
		abort();
	if (esock_mpa_frame_encode(&f, out, sizeof(out)) != n || memcmp(out, data, (size_t)n))
		abort();
	if (reply)
		return;
	memset(&t, 0, sizeof(t));
	if (esock_mpa_reply_build(&pol, &f, &rep, &par, &t) < 0 && !t.valid)
		abort();
	n = esock_mpa_frame_encode(&rep, out, sizeof(out));
	if (n < 0 || esock_mpa_frame_decode(&again, true, out, (size_t)n, 0, NULL) != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, false);
	one(data, size, true);
	return 0;
}
