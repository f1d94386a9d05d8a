/* SPDX-License-Identifier: MIT */
/*
 * MPA incremental receive: reference FPDUs, tx->rx round trips of
 * multi-FPDU streams (markers and CRC on/off, arbitrary stream positions) fed
 * in every two-piece split, one octet at a time and random splits, in both
 * delivery modes; every error path and its terminal behaviour.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/mpa.h>

#include "tests/unit/mpa_vectors.h"
#include "tests/unit/testutil.h"
#include "util/byteorder.h"

#define MAXF 8

/* A stream of FPDUs built by the transmitter, and what it carries. */
struct stream {
	uint8_t wire[40000];
	size_t len;
	uint8_t ulpdu[MAXF][4096];
	size_t ulen[MAXF];
	int n;
	bool crc, markers;
	uint32_t pos;
};

static void stream_make(struct stream *s, uint64_t *rng, int n, size_t maxlen, bool crc,
			bool markers, uint32_t pos)
{
	struct esock_mpa_tx tx;

	memset(s, 0, sizeof(*s));
	s->crc = crc;
	s->markers = markers;
	s->pos = pos;
	s->n = n;
	esock_mpa_tx_init(&tx, crc, markers, pos);
	for (int i = 0; i < n; i++) {
		struct iovec v = { s->ulpdu[i], 0 };
		ssize_t k;

		s->ulen[i] = v.iov_len = (size_t)tu_rng_below(rng, maxlen + 1);
		tu_rng_fill(rng, s->ulpdu[i], s->ulen[i]);
		k = esock_mpa_tx_build(&tx, &v, 1);
		ck_assert_int_gt(k, 0);
		ck_assert_int_eq(esock_mpa_tx_flatten(&tx, s->wire + s->len, sizeof(s->wire) - s->len), k);
		esock_mpa_tx_advance(&tx, (size_t)k);
		s->len += (size_t)k;
	}
}

/* Receiving side: parser plus reassembly of what it delivers. */
struct sink {
	struct esock_mpa_rx rx;
	uint8_t buf[65536];
	uint8_t got[MAXF][4096];
	size_t glen[MAXF];
	int ndone;
	bool in_fpdu;
	int err;
};

static void sink_init(struct sink *k, const struct stream *s, bool buffered)
{
	struct esock_mpa_rx_cfg cfg = { .crc = s->crc, .markers = s->markers, .pos = s->pos,
					.buf = buffered ? k->buf : NULL,
					.buf_len = buffered ? sizeof(k->buf) : 0, .peek = buffered ? 0 : 18 };

	memset(k->glen, 0, sizeof(k->glen));
	k->ndone = 0;
	k->in_fpdu = false;
	k->err = 0;
	ck_assert_int_eq(esock_mpa_rx_init(&k->rx, &cfg), 0);
}

static void sink_event(struct sink *k, const struct esock_mpa_ev *ev)
{
	int i = k->ndone;

	switch (ev->type) {
	case ESOCK_MPA_EV_ULPDU:
		ck_assert_int_lt(i, MAXF);
		memcpy(k->got[i], ev->data, ev->len);
		k->glen[i] = ev->len;
		k->ndone++;
		break;
	case ESOCK_MPA_EV_HDR:
		ck_assert(!k->in_fpdu);
		ck_assert_int_lt(i, MAXF);
		k->in_fpdu = true;
		ck_assert_uint_le(ev->len, 18);
		memcpy(k->got[i], ev->data, ev->len);
		k->glen[i] = ev->len;
		break;
	case ESOCK_MPA_EV_DATA:
		ck_assert(k->in_fpdu);
		ck_assert_uint_gt(ev->len, 0);
		memcpy(k->got[i] + k->glen[i], ev->data, ev->len);
		k->glen[i] += ev->len;
		break;
	case ESOCK_MPA_EV_END:
		ck_assert(k->in_fpdu);
		ck_assert_uint_eq(k->glen[i], ev->ulpdu_len);
		k->in_fpdu = false;
		k->ndone++;
		break;
	default:
		break;
	}
}

static int sink_feed(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;

	while (n > 0) {
		struct esock_mpa_ev ev;
		ssize_t used = esock_mpa_rx_feed(&k->rx, p, n, &ev);

		if (used < 0) {
			k->err = (int)used;
			return -1;
		}
		ck_assert_uint_le((size_t)used, n);
		sink_event(k, &ev);
		if (used == 0 && ev.type == ESOCK_MPA_EV_NONE)
			break;
		p += used;
		n -= (size_t)used;
	}
	return 0;
}

static void sink_check(const struct sink *k, const struct stream *s)
{
	ck_assert_int_eq(k->err, 0);
	ck_assert_int_eq(k->ndone, s->n);
	ck_assert(esock_mpa_rx_idle(&k->rx));
	for (int i = 0; i < s->n; i++) {
		ck_assert_uint_eq(k->glen[i], s->ulen[i]);
		tu_assert_mem(k->got[i], s->ulpdu[i], s->ulen[i]);
	}
	ck_assert_uint_eq(k->rx.pos, s->pos + (uint32_t)s->len);
}

START_TEST(test_vectors_one_byte)
{
	static struct sink k;
	uint8_t w[128];
	int n = tu_hex(fpdu_vecs[_i].hex, w, sizeof(w));
	struct stream *s = calloc(1, sizeof(*s));

	s->crc = true;
	s->n = 1;
	s->len = (size_t)n;
	s->ulen[0] = esock_get_be16(w);
	memcpy(s->ulpdu[0], w + 2, s->ulen[0]);
	for (int mode = 0; mode < 2; mode++) {
		sink_init(&k, s, mode == 0);
		ck_assert_int_eq(tu_feed_chunks(w, (size_t)n, 1, sink_feed, &k), 0);
		sink_check(&k, s);
	}
	free(s);
}
END_TEST

/* _i bit 0: CRC, bit 1: markers, bit 2: buffered mode. */
START_TEST(test_every_split)
{
	uint64_t rng = tu_rng_seed("mpa rx every split");
	struct stream *s = malloc(sizeof(*s));
	static struct sink k;
	bool crc = _i & 1, markers = _i & 2, buffered = _i & 4;

	for (int round = 0; round < 3; round++) {
		uint32_t pos = 4 * (uint32_t)tu_rng_below(&rng, 256);

		stream_make(s, &rng, 4, 200, crc, markers, pos);
		for (size_t cut = 0; cut <= s->len; cut++) {
			sink_init(&k, s, buffered);
			ck_assert_int_eq(tu_feed_cut(s->wire, s->len, cut, sink_feed, &k), 0);
			sink_check(&k, s);
		}
		sink_init(&k, s, buffered);
		ck_assert_int_eq(tu_feed_chunks(s->wire, s->len, 1, sink_feed, &k), 0);
		sink_check(&k, s);
	}
	free(s);
}
END_TEST

START_TEST(test_random_streams)
{
	uint64_t rng = tu_rng_seed("mpa rx random streams");
	struct stream *s = malloc(sizeof(*s));
	static struct sink k;

	for (int iter = 0; iter < 300; iter++) {
		uint64_t r = tu_rng_next(&rng);
		uint32_t pos = (r & 8) ? 0xffffff00u + 4 * (uint32_t)(r >> 40 & 63)
				       : 4 * (uint32_t)(r >> 20 & 0xfffff);

		stream_make(s, &rng, 1 + (int)(r >> 8 & 7), 4000, r & 1, r & 2, pos);
		sink_init(&k, s, r & 4);
		ck_assert_int_eq(tu_feed_random(s->wire, s->len, &rng, sink_feed, &k), 0);
		sink_check(&k, s);
	}
	free(s);
}
END_TEST

static int count_ulpdu_events;

static int sink_feed_count(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;
	int before = k->ndone;
	bool in = k->in_fpdu;
	int rc = sink_feed(ctx, p, n);

	/* FPDUs completed without an EV_HDR first came as one EV_ULPDU. */
	if (!in && k->ndone > before && !k->in_fpdu)
		count_ulpdu_events++;
	return rc;
}

/*
 * cfg.whole: in header-first mode an FPDU wholly inside one input comes as
 * one verified EV_ULPDU; split ones still come as HDR/DATA/END.  The result
 * is the same stream either way.
 */
START_TEST(test_whole_mode)
{
	uint64_t rng = tu_rng_seed("mpa rx whole mode");
	struct stream *s = malloc(sizeof(*s));
	static struct sink k;

	for (int iter = 0; iter < 200; iter++) {
		uint64_t r = tu_rng_next(&rng);
		struct esock_mpa_rx_cfg cfg = { .crc = r & 1, .peek = 18, .whole = true };

		stream_make(s, &rng, 1 + (int)(r >> 8 & 7), 4000, r & 1, false, 0);
		sink_init(&k, s, false);
		ck_assert_int_eq(esock_mpa_rx_init(&k.rx, &cfg), 0);
		count_ulpdu_events = 0;
		if (iter & 1) {
			/* All at once: every FPDU whole, one event each. */
			ck_assert_int_eq(sink_feed_count(&k, s->wire, s->len), 0);
			ck_assert_int_ge(count_ulpdu_events, 1);
		} else {
			ck_assert_int_eq(tu_feed_random(s->wire, s->len, &rng, sink_feed, &k), 0);
		}
		sink_check(&k, s);
	}
	/* One octet at a time nothing is ever whole. */
	stream_make(s, &rng, 3, 100, true, false, 0);
	sink_init(&k, s, false);
	k.rx.cfg.whole = true;
	count_ulpdu_events = 0;
	ck_assert_int_eq(tu_feed_chunks(s->wire, s->len, 1, sink_feed_count, &k), 0);
	ck_assert_int_eq(count_ulpdu_events, 0);
	sink_check(&k, s);
	free(s);
}
END_TEST

static int feed_all(struct sink *k, const uint8_t *w, size_t len)
{
	return tu_feed_chunks(w, len, 1, sink_feed, k);
}

START_TEST(test_bad_crc)
{
	uint8_t w[128];
	int n = tu_hex(fpdu_vecs[2].hex, w, sizeof(w));
	static struct sink k;
	struct stream s = { .crc = true };
	const struct esock_term *t;
	struct esock_mpa_ev ev;

	w[n - 1] ^= 0x01;
	sink_init(&k, &s, true);
	ck_assert_int_eq(feed_all(&k, w, (size_t)n), -1);
	ck_assert_int_eq(k.err, -EBADMSG);
	ck_assert_int_eq(k.ndone, 0);
	t = esock_mpa_rx_term(&k.rx);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->layer, ESOCK_TERM_LAYER_LLP);
	ck_assert_uint_eq(t->etype, ESOCK_TERM_LLP_ETYPE_MPA);
	ck_assert_uint_eq(t->ecode, ESOCK_TERM_LLP_CRC);
	/* Terminal: later input is refused with the same code, nothing consumed. */
	ck_assert_int_eq(esock_mpa_rx_feed(&k.rx, w, (size_t)n, &ev), -EBADMSG);
	ck_assert_int_eq(ev.type, ESOCK_MPA_EV_NONE);
	ck_assert(!esock_mpa_rx_idle(&k.rx));
	/* The whole FPDU in one piece takes the in-place fast path: same verdict. */
	sink_init(&k, &s, true);
	ck_assert_int_eq(tu_feed_chunks(w, (size_t)n, (size_t)n, sink_feed, &k), -1);
	ck_assert_int_eq(k.err, -EBADMSG);
	ck_assert_uint_eq(esock_mpa_rx_term(&k.rx)->ecode, ESOCK_TERM_LLP_CRC);
	/* A corrupted payload octet is caught the same way, in header-first mode too. */
	w[n - 1] ^= 0x01;
	w[25] ^= 0x40;
	sink_init(&k, &s, false);
	ck_assert_int_eq(feed_all(&k, w, (size_t)n), -1);
	ck_assert_int_eq(k.err, -EBADMSG);
	/* CRC not negotiated: the field is ignored. */
	s.crc = false;
	s.n = 1;
	s.ulen[0] = 31;
	memcpy(s.ulpdu[0], w + 2, 31);
	s.len = (size_t)n;
	sink_init(&k, &s, true);
	ck_assert_int_eq(feed_all(&k, w, (size_t)n), 0);
	sink_check(&k, &s);
}
END_TEST

START_TEST(test_bad_marker)
{
	uint64_t rng = tu_rng_seed("mpa rx bad marker");
	struct stream *s = malloc(sizeof(*s));
	static struct sink k;
	const struct esock_term *t;

	/* Position 0: the leading marker at offset 0, the next at 512. */
	stream_make(s, &rng, 1, 1500, false, true, 0);
	for (size_t at = 0; at < s->len; at += 512) {
		uint8_t save = s->wire[at + 3];

		s->wire[at + 3] ^= 0x04;
		sink_init(&k, s, true);
		ck_assert_int_eq(feed_all(&k, s->wire, s->len), -1);
		ck_assert_int_eq(k.err, -EPROTO);
		t = esock_mpa_rx_term(&k.rx);
		ck_assert_uint_eq(t->ecode, ESOCK_TERM_LLP_MARKER);
		s->wire[at + 3] = save;
	}
	/* Reserved marker octets are ignored (CRC off). */
	s->wire[512] = 0xff;
	sink_init(&k, s, true);
	ck_assert_int_eq(feed_all(&k, s->wire, s->len), 0);
	ck_assert_int_eq(k.ndone, 1);
	free(s);
}
END_TEST

/* Tolerant mode (ddpdump): errors are flagged on the FPDU and parsing goes on. */
START_TEST(test_tolerant)
{
	uint64_t rng = tu_rng_seed("mpa rx tolerant");
	struct stream *s = malloc(sizeof(*s));
	static uint8_t buf[65536];

	for (int mode = 0; mode < 4; mode++) {
		bool markers = mode & 1, whole = mode & 2;
		struct esock_mpa_rx_cfg cfg = { .crc = true, .markers = markers, .buf = buf,
						.buf_len = sizeof(buf), .tolerant = true };
		struct esock_mpa_rx rx;
		size_t off = 0, first_end;
		int n = 0, bad = 0, badmark = 0;
		unsigned nmark = 0;

		size_t mark;

		/* A stream with a marker somewhere after FPDU 0 (when markers are on). */
		do {
			stream_make(s, &rng, 3, 1500, true, markers, 0);
			first_end = esock_mpa_fpdu_len(s->ulen[0], markers, 0);
			mark = (first_end + 511) / 512 * 512;
		} while (markers && mark + 4 > s->len);
		s->wire[first_end - 1] ^= 0x80; /* CRC of FPDU 0 */
		if (markers)
			s->wire[mark + 3] ^= 0x04; /* a marker of a later FPDU */
		esock_mpa_rx_init(&rx, &cfg);
		while (off < s->len) {
			struct esock_mpa_ev ev;
			size_t chunk = whole ? s->len - off : 7;
			ssize_t k = esock_mpa_rx_feed(&rx, s->wire + off, chunk > s->len - off ? s->len - off : chunk, &ev);

			ck_assert_int_ge(k, 0);
			off += (size_t)k;
			if (ev.type != ESOCK_MPA_EV_ULPDU)
				continue;
			ck_assert_uint_eq(ev.len, s->ulen[n]);
			tu_assert_mem(ev.data, s->ulpdu[n], ev.len);
			if (ev.flags & ESOCK_MPA_EVF_CRC_BAD) {
				bad++;
				ck_assert_uint_ne(ev.crc_rx, ev.crc_calc);
			} else {
				ck_assert_uint_eq(ev.crc_rx, ev.crc_calc);
			}
			badmark += (ev.flags & ESOCK_MPA_EVF_MARKER_BAD) != 0;
			nmark += ev.markers;
			n++;
		}
		ck_assert_int_eq(n, 3);
		ck_assert_int_eq(bad, markers ? 2 : 1); /* the marker is under FPDU 1's CRC */
		ck_assert_int_eq(badmark, markers ? 1 : 0);
		ck_assert_uint_eq(nmark, markers ? (unsigned)((s->len + 511) / 512) : 0);
	}
	free(s);
}
END_TEST

START_TEST(test_oversize)
{
	static struct sink k;
	uint8_t w[8] = { 0x01, 0x00 }; /* ULPDU_Length 256 */
	struct esock_mpa_rx_cfg cfg = { .max_ulpdu = 255, .peek = 16 };
	struct esock_mpa_ev ev;

	ck_assert_int_eq(esock_mpa_rx_init(&k.rx, &cfg), 0);
	ck_assert_int_eq(esock_mpa_rx_feed(&k.rx, w, 1, &ev), 1);
	ck_assert_int_eq(esock_mpa_rx_feed(&k.rx, w + 1, 7, &ev), -EMSGSIZE);
	ck_assert_uint_eq(esock_mpa_rx_term(&k.rx)->ecode, ESOCK_TERM_LLP_MARKER);
	ck_assert_int_eq(esock_mpa_rx_feed(&k.rx, w, 8, &ev), -EMSGSIZE);
}
END_TEST

/*
 * esock_mpa_rx_peek: at every FPDU boundary, the stream still to come gives
 * the next FPDU's length field and first ULPDU octets, markers left out,
 * wherever the markers fall (any start position).
 */
START_TEST(test_peek_next_header)
{
	uint64_t rng = tu_rng_seed("peek next header");
	static struct stream s;
	static struct sink k;

	for (int round = 0; round < 40; round++) {
		bool markers = round & 1;
		uint32_t pos = 4 * (uint32_t)tu_rng_below(&rng, 256); /* FPDUs start 4-aligned */
		size_t off = 0;

		stream_make(&s, &rng, 6, 700, round & 2, markers, pos);
		sink_init(&k, &s, true);
		while (off < s.len) {
			struct esock_mpa_ev ev;
			ssize_t n;

			if (esock_mpa_rx_idle(&k.rx) && k.ndone < s.n) {
				uint8_t want[2 + 14], got[sizeof(want)];
				size_t w = 2 + (s.ulen[k.ndone] < 14 ? s.ulen[k.ndone] : 14);

				want[0] = (uint8_t)(s.ulen[k.ndone] >> 8);
				want[1] = (uint8_t)s.ulen[k.ndone];
				memcpy(want + 2, s.ulpdu[k.ndone], w - 2);
				ck_assert_uint_eq(esock_mpa_rx_peek(&k.rx, s.wire + off, s.len - off, got, w), w);
				tu_assert_mem(got, want, w);
			}
			n = esock_mpa_rx_feed(&k.rx, s.wire + off, 1, &ev);
			ck_assert_int_ge(n, 0);
			off += (size_t)n;
			if (ev.type != ESOCK_MPA_EV_NONE)
				sink_event(&k, &ev);
		}
		ck_assert_int_eq(k.ndone, s.n);
	}
}
END_TEST

START_TEST(test_init_errors)
{
	struct esock_mpa_rx rx;
	uint8_t small[100];
	struct esock_mpa_rx_cfg cfg = { .buf = small, .buf_len = sizeof(small) };

	ck_assert_int_eq(esock_mpa_rx_init(&rx, &cfg), -EINVAL);
	cfg.max_ulpdu = 100;
	ck_assert_int_eq(esock_mpa_rx_init(&rx, &cfg), 0);
	cfg.buf = NULL;
	cfg.peek = ESOCK_MPA_RX_PEEK_MAX + 1;
	ck_assert_int_eq(esock_mpa_rx_init(&rx, &cfg), -EINVAL);
	ck_assert_ptr_null(esock_mpa_rx_term(&rx));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpa_rx");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_vectors_one_byte, 0, (int)FPDU_VECS);
	tcase_add_loop_test(tc, test_every_split, 0, 8);
	tcase_add_test(tc, test_random_streams);
	tcase_add_test(tc, test_whole_mode);
	tcase_add_test(tc, test_bad_crc);
	tcase_add_test(tc, test_bad_marker);
	tcase_add_test(tc, test_tolerant);
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_init_errors);
	tcase_add_test(tc, test_peek_next_header);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
