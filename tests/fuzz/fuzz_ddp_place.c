/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: DDP header decode and placement.  The input is a sequence of
 * records: [1 octet length n][n octets DDP segment].  Each segment is decoded
 * (decode -> encode -> decode must agree), then placed against a synthetic
 * table (two regions and four posted buffers, each between guard zones).
 * Properties: guards never change; every completion is reported once, with a
 * length within its buffer; once an error is reported it stays.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/ddp.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define G 32
static uint8_t region[G + 256 + G], bufs[4][G + 128 + G];
static int handed;

static int lk_stag(void *ctx, uint32_t stag, struct esock_ddp_region *out)
{
	(void)ctx;
	if ((stag & 0xff) > 1)
		return -ENOENT;
	*out = (struct esock_ddp_region){ (stag & 1) ? UINT64_MAX - 255 : 0x1000, 256, region + G,
					  (stag & 0x100) ? ESOCK_DDP_ACCESS_REMOTE_READ
							 : ESOCK_DDP_ACCESS_REMOTE_WRITE,
					  (stag >> 16) & 1 };
	return 0;
}

static int lk_untagged(void *ctx, uint32_t qn, uint32_t msn, struct esock_ddp_buf *out)
{
	(void)ctx;
	(void)qn;
	(void)msn;
	if (handed >= 4)
		return -ENOENT;
	*out = (struct esock_ddp_buf){ bufs[handed] + G, 128, (uint64_t)handed };
	handed++;
	return 0;
}

static void check_guards(void)
{
	for (int i = 0; i < G; i++) {
		if (region[i] != 0xa5 || region[G + 256 + i] != 0xa5)
			abort();
		for (int b = 0; b < 4; b++)
			if (bufs[b][i] != 0xa5 || bufs[b][G + 128 + i] != 0xa5)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct esock_ddp_place p;
	struct esock_ddp_place_cfg cfg = { .lookup = { lk_stag, lk_untagged, NULL }, .pd = 0 };
	bool seen[4] = { false };
	int err = 0;

	memset(region, 0xa5, sizeof(region));
	memset(bufs, 0xa5, sizeof(bufs));
	handed = 0;
	if (esock_ddp_place_init(&p, &cfg) < 0)
		abort();
	while (size > 0) {
		size_t n = data[0] < size - 1 ? data[0] : size - 1;
		const uint8_t *seg = data + 1;
		struct esock_ddp_hdr h, h2;
		struct esock_ddp_placed out;
		struct esock_ddp_completion c;
		uint8_t enc[18];
		ssize_t hl = esock_ddp_hdr_decode(&h, seg, n);
		int rc;

		data += 1 + n;
		size -= 1 + n;
		if (hl < 0)
			continue;
		if (esock_ddp_hdr_encode(&h, enc, sizeof(enc)) != hl || memcmp(enc, seg, (size_t)hl) ||
		    esock_ddp_hdr_decode(&h2, enc, (size_t)hl) != hl || memcmp(&h, &h2, sizeof(h)))
			abort();
		rc = esock_ddp_place_segment(&p, &h, seg + hl, n - (size_t)hl,
					     ESOCK_DDP_ACCESS_REMOTE_WRITE, &out);
		if (err && rc != err)
			abort(); /* terminal */
		if (rc < 0) {
			err = rc;
			if (!esock_ddp_place_term(&p))
				abort();
		}
		while ((rc = esock_ddp_place_poll(&p, &c)) == 1) {
			if (c.buf.cookie >= 4 || seen[c.buf.cookie] || c.len > c.buf.len)
				abort();
			seen[c.buf.cookie] = true;
		}
		if (rc < 0 && rc != err)
			abort();
		check_guards();
	}
	return 0;
}
