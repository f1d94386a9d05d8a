/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the MPA FPDU receive parser.  The first two octets choose CRC,
 * markers, delivery mode, maximum ULPDU, starting position and a split seed;
 * the rest is the stream.  Properties: consumed <= offered; the whole input
 * and the same input split differently give the same ULPDUs and the same
 * final error; each ULPDU re-encoded by the transmitter (same configuration
 * and position) reproduces the input octets of its FPDU when CRC is on (PAD
 * and reserved marker octets are the sender's choice, covered by the CRC); an
 * error stays terminal.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <esock/crc32c.h>
#include <esock/mpa.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
	uint32_t digest;   /* CRC over every delivered ULPDU octet and boundary */
	int nfpdu;
	int err;
	size_t consumed;
};

static uint8_t ulpdu_buf[65536];

/*
 * Our re-encoding |wire| must equal the received FPDU |in| except where the
 * sender was free: reserved marker octets and PAD octets (any value, both
 * covered by the CRC), and so the CRC when one of those differed.
 */
static void same_fpdu(const struct esock_mpa_rx_cfg *cfg, const uint8_t *wire, const uint8_t *in,
		      size_t n, size_t start, size_t ulen)
{
	size_t body = 2 + ulen, pad_end = body + esock_mpa_pad_len(ulen), j = 0;
	bool free_differs = false;

	for (size_t i = 0; i < n; i++) {
		uint32_t p = cfg->pos + (uint32_t)(start + i);

		if (cfg->markers && (p & 511) < 4) {
			if ((p & 511) >= 2 && wire[i] != in[i])
				abort(); /* FPDUPTR */
			free_differs |= wire[i] != in[i]; /* reserved */
			continue;
		}
		if (j >= body && j < pad_end)
			free_differs |= wire[i] != in[i];
		else if (wire[i] != in[i] && !(j >= pad_end && free_differs))
			abort();
		j++;
	}
}

static void run_stream(const struct esock_mpa_rx_cfg *cfg0, const uint8_t *d, size_t n,
		       unsigned seed, struct run *r, const uint8_t *orig)
{
	struct esock_mpa_rx rx;
	struct esock_mpa_rx_cfg cfg = *cfg0;
	size_t off = 0, fpdu_start = 0;

	memset(r, 0, sizeof(*r));
	if (esock_mpa_rx_init(&rx, &cfg) < 0)
		abort();
	while (off < n) {
		size_t chunk = seed ? 1 + (seed * 2654435761u + off) % 61 : n - off;
		struct esock_mpa_ev ev;
		ssize_t used;

		if (chunk > n - off)
			chunk = n - off;
		used = esock_mpa_rx_feed(&rx, d + off, chunk, &ev);
		if (used < 0) {
			if (esock_mpa_rx_feed(&rx, d, n, &ev) != used || !esock_mpa_rx_term(&rx))
				abort(); /* errors are terminal and explained */
			r->err = (int)used;
			break;
		}
		if ((size_t)used > chunk)
			abort();
		off += (size_t)used;
		if (ev.type == ESOCK_MPA_EV_DATA || ev.type == ESOCK_MPA_EV_ULPDU ||
		    ev.type == ESOCK_MPA_EV_HDR)
			r->digest = esock_crc32c(r->digest, ev.data, ev.len);
		if (ev.type == ESOCK_MPA_EV_ULPDU || ev.type == ESOCK_MPA_EV_END) {
			r->nfpdu++;
			r->digest = esock_crc32c(r->digest, "|", 1);
			/* Re-encode a buffered ULPDU: it must give back the input FPDU. */
			if (ev.type == ESOCK_MPA_EV_ULPDU && cfg.crc && orig) {
				static uint8_t wire[70000];
				struct esock_mpa_tx tx;
				struct iovec v = { (void *)(uintptr_t)ev.data, ev.len };
				ssize_t k;

				esock_mpa_tx_init(&tx, true, cfg.markers, cfg.pos + (uint32_t)fpdu_start);
				k = esock_mpa_tx_build(&tx, &v, 1);
				if (k > 0 && (size_t)k == off - fpdu_start &&
				    esock_mpa_tx_flatten(&tx, wire, sizeof(wire)) == k)
					same_fpdu(&cfg, wire, orig + fpdu_start, (size_t)k, fpdu_start, ev.len);
				else if (!cfg.markers)
					abort();
			}
			fpdu_start = off;
		}
		if (used == 0 && ev.type == ESOCK_MPA_EV_NONE)
			abort(); /* no progress on non-empty input */
	}
	r->consumed = off;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct esock_mpa_rx_cfg cfg = { 0 };
	struct run a, b;

	if (size < 2)
		return 0;
	cfg.crc = data[0] & 1;
	cfg.markers = data[0] & 2;
	cfg.max_ulpdu = (data[0] & 4) ? 0 : (uint16_t)(64 + data[1] * 4);
	cfg.pos = (uint32_t)(data[0] >> 3) * 4 * 37;
	if (data[1] & 1) {
		cfg.buf = ulpdu_buf;
		cfg.buf_len = sizeof(ulpdu_buf);
	} else {
		cfg.peek = data[1] % (ESOCK_MPA_RX_PEEK_MAX + 1);
		cfg.whole = data[1] & 0x80; /* whole FPDUs as one verified event */
	}
	data += 2;
	size -= 2;
	run_stream(&cfg, data, size, 0, &a, data);
	run_stream(&cfg, data, size, 1 + (unsigned)size % 977, &b, NULL);
	/*
	 * The same FPDUs and the same error for every split.  The octets handed
	 * out agree too, except before an error: a split FPDU shows its first
	 * octets before its CRC fails, a whole one (cfg.whole) shows nothing.
	 */
	if (a.nfpdu != b.nfpdu || a.err != b.err ||
	    ((!a.err || !cfg.whole) && a.digest != b.digest) || (!a.err && a.consumed != b.consumed))
		abort();
	if (a.consumed > size)
		abort();
	return 0;
}
