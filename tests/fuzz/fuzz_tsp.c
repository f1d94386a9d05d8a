/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: TSP, the TCP Server protocol (tcpserver/proto/tsp.c), as
 * tcpserverd meets it from a hostile host.  Properties: the decoder never
 * reads past its input and takes no more than it was given; a decoded
 * message re-encodes to exactly the octets it came from and decodes again to
 * the same message; its data points inside the input.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tcpserver/proto/tsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX];
	struct esock_tsp_msg m, m2;
	int n = esock_tsp_decode(data, size, &m), k;

	if (n < 0)
		return 0;
	if ((size_t)n > size || (m.data_len && (m.data < data || m.data + m.data_len > data + n)))
		abort();
	if ((k = esock_tsp_encode(&m, out, sizeof(out))) != n || memcmp(out, data, (size_t)n) != 0)
		abort();
	if (esock_tsp_decode(out, (size_t)k, &m2) != n || m2.result != m.result ||
	    m2.data_len != m.data_len || memcmp(&m2.h, &m.h, sizeof(m.h)) != 0 ||
	    memcmp(&m2.u, &m.u, sizeof(m.u)) != 0 ||
	    (m.data_len && memcmp(m2.data, m.data, m.data_len) != 0))
		abort();
	return 0;
}
