/* SPDX-License-Identifier: MIT */
/*
 * MPA FPDU receive (RFC 5044 §4.1 format, §4.3 markers, §4.4 CRC): an
 * incremental parser over the TCP byte stream that accepts any split, one
 * octet at a time included.  Markers are taken out before the phase
 * functions see the octets; one small function per phase (length, payload,
 * trailer) and a short driver loop.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/crc32c.h>
#include <esock/mpa.h>

#include "mpa/mpa_wire.h"

/* The fields fit the fixed storage users allocate (the installed header's size). */
_Static_assert(sizeof(struct esock_mpa_rx) == ESOCK_MPA_RX_WORDS * sizeof(uint64_t),
	       "struct esock_mpa_rx outgrew ESOCK_MPA_RX_WORDS: raise it (an ABI change) or shrink the fields");

enum { RX_LEN, RX_PEEK, RX_PAYLOAD, RX_TRAILER };

ESOCK_EXPORT int esock_mpa_rx_init(struct esock_mpa_rx *rx, const struct esock_mpa_rx_cfg *cfg)
{
	size_t max = cfg->max_ulpdu ? cfg->max_ulpdu : ESOCK_MPA_ULPDU_MAX;

	if ((cfg->buf && cfg->buf_len < max) || cfg->peek > ESOCK_MPA_RX_PEEK_MAX)
		return -EINVAL;
	memset(rx, 0, sizeof(*rx));
	rx->cfg = *cfg;
	rx->cfg.max_ulpdu = (uint16_t)max;
	rx->pos = cfg->pos;
	rx->state = RX_LEN;
	return 0;
}

ESOCK_EXPORT const struct esock_term *esock_mpa_rx_term(const struct esock_mpa_rx *rx)
{
	return rx->err ? &rx->term : NULL;
}

ESOCK_EXPORT bool esock_mpa_rx_idle(const struct esock_mpa_rx *rx)
{
	return rx->state == RX_LEN && rx->have == 0 && !rx->err;
}

ESOCK_EXPORT size_t esock_mpa_rx_peek(const struct esock_mpa_rx *rx, const uint8_t *data,
				      size_t len, uint8_t *out, size_t want)
{
	uint32_t pos = rx->pos;
	size_t n = 0;

	for (size_t i = 0; i < len && n < want; i++, pos++)
		if (!rx->cfg.markers || (pos & (ESOCK_MPA_MARKER_INTERVAL - 1)) >= ESOCK_MPA_MARKER_LEN)
			out[n++] = data[i];
	return n;
}

static ssize_t rx_fail(struct esock_mpa_rx *rx, int rc, uint8_t code)
{
	esock_term_set(&rx->term, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA, code, 0);
	rx->err = rc;
	return rc;
}

static void take(struct esock_mpa_rx *rx, const uint8_t *p, size_t n)
{
	rx->crc = esock_crc32c(rx->crc, p, n);
	rx->pos += (uint32_t)n;
}

/* Inside a marker: collect it, then check its FPDUPTR. */
static ssize_t rx_marker(struct esock_mpa_rx *rx, const uint8_t *p, size_t len)
{
	size_t at = rx->pos & (ESOCK_MPA_MARKER_INTERVAL - 1);
	size_t n = ESOCK_MPA_MARKER_LEN - at;
	uint32_t want;

	if (n > len)
		n = len;
	memcpy(rx->marker + at, p, n);
	take(rx, p, n);
	if (at + n < ESOCK_MPA_MARKER_LEN)
		return (ssize_t)n;
	/* A marker right before ULPDU_Length leads its FPDU: FPDUPTR 0. */
	if (rx->state == RX_LEN && rx->have == 0)
		want = 0;
	else
		want = rx->pos - ESOCK_MPA_MARKER_LEN - rx->hdr_pos;
	rx->markers++;
	if (esock_get_be16(rx->marker + 2) != want) {
		if (!rx->cfg.tolerant)
			return rx_fail(rx, -EPROTO, ESOCK_TERM_LLP_MARKER);
		rx->ev_flags |= ESOCK_MPA_EVF_MARKER_BAD;
	}
	return (ssize_t)n;
}

static size_t run_len(const struct esock_mpa_rx *rx, size_t want, size_t len)
{
	size_t n = want < len ? want : len;

	if (rx->cfg.markers && n > mpa_to_marker(rx->pos))
		n = mpa_to_marker(rx->pos);
	return n;
}

static void enter_payload(struct esock_mpa_rx *rx, struct esock_mpa_ev *ev)
{
	rx->have = 0;
	rx->peek_len = 0;
	if (rx->cfg.buf) {
		rx->state = rx->ulpdu_len ? RX_PAYLOAD : RX_TRAILER;
		return;
	}
	rx->peek_len = rx->cfg.peek < rx->ulpdu_len ? rx->cfg.peek : rx->ulpdu_len;
	rx->state = RX_PEEK;
	if (rx->peek_len == 0) {
		ev->type = ESOCK_MPA_EV_HDR;
		ev->data = rx->peek;
		ev->len = 0;
		rx->state = rx->ulpdu_len ? RX_PAYLOAD : RX_TRAILER;
	}
}

static ssize_t rx_len(struct esock_mpa_rx *rx, const uint8_t *p, size_t len,
		      struct esock_mpa_ev *ev)
{
	size_t n = run_len(rx, ESOCK_MPA_LEN_LEN - rx->have, len);

	if (rx->have == 0)
		rx->hdr_pos = rx->pos;
	memcpy(rx->len_field + rx->have, p, n);
	take(rx, p, n);
	rx->have += n;
	if (rx->have < ESOCK_MPA_LEN_LEN)
		return (ssize_t)n;
	rx->ulpdu_len = esock_get_be16(rx->len_field);
	if (rx->ulpdu_len > rx->cfg.max_ulpdu)
		return rx_fail(rx, -EMSGSIZE, ESOCK_TERM_LLP_MARKER);
	enter_payload(rx, ev);
	return (ssize_t)n;
}

/* Header-first mode: gather the first |peek_len| octets for EV_HDR. */
static ssize_t rx_peek(struct esock_mpa_rx *rx, const uint8_t *p, size_t len,
		       struct esock_mpa_ev *ev)
{
	size_t n = run_len(rx, rx->peek_len - rx->have, len);

	memcpy(rx->peek + rx->have, p, n);
	take(rx, p, n);
	rx->have += n;
	if (rx->have == rx->peek_len) {
		ev->type = ESOCK_MPA_EV_HDR;
		ev->data = rx->peek;
		ev->len = rx->peek_len;
		rx->state = rx->have < rx->ulpdu_len ? RX_PAYLOAD : RX_TRAILER;
		if (rx->state == RX_TRAILER)
			rx->have = 0;
	}
	return (ssize_t)n;
}

static ssize_t rx_payload(struct esock_mpa_rx *rx, const uint8_t *p, size_t len,
			  struct esock_mpa_ev *ev)
{
	size_t n = run_len(rx, rx->ulpdu_len - rx->have, len);

	if (rx->cfg.buf) {
		memcpy(rx->cfg.buf + rx->have, p, n);
	} else {
		ev->type = ESOCK_MPA_EV_DATA;
		ev->data = p;
		ev->len = n;
	}
	take(rx, p, n);
	rx->have += n;
	if (rx->have == rx->ulpdu_len) {
		rx->state = RX_TRAILER;
		rx->have = 0;
	}
	return (ssize_t)n;
}

/* Fills the final event's FPDU facts and resets for the next FPDU. */
static void fpdu_done(struct esock_mpa_rx *rx, struct esock_mpa_ev *ev, uint32_t crc_rx,
		      uint32_t crc_calc)
{
	ev->flags = rx->ev_flags;
	ev->markers = rx->markers;
	ev->crc_rx = crc_rx;
	ev->crc_calc = crc_calc;
	rx->fpdus++;
	rx->state = RX_LEN;
	rx->have = 0;
	rx->crc = 0;
	rx->ev_flags = 0;
	rx->markers = 0;
}

static ssize_t rx_trailer(struct esock_mpa_rx *rx, const uint8_t *p, size_t len,
			  struct esock_mpa_ev *ev)
{
	size_t pad = esock_mpa_pad_len(rx->ulpdu_len);
	size_t n = run_len(rx, pad + ESOCK_MPA_CRC_LEN - rx->have, len);
	size_t crc_part = rx->have + n > pad ? rx->have + n - (rx->have > pad ? rx->have : pad) : 0;
	uint32_t want;

	memcpy(rx->trailer + rx->have, p, n);
	rx->crc = esock_crc32c(rx->crc, p, n - crc_part); /* PAD is covered, CRC is not */
	rx->pos += (uint32_t)n;
	rx->have += n;
	if (rx->have < pad + ESOCK_MPA_CRC_LEN)
		return (ssize_t)n;
	want = esock_get_le32(rx->trailer + pad);
	if (rx->cfg.crc && want != rx->crc) {
		if (!rx->cfg.tolerant)
			return rx_fail(rx, -EBADMSG, ESOCK_TERM_LLP_CRC);
		rx->ev_flags |= ESOCK_MPA_EVF_CRC_BAD;
	}
	ev->type = rx->cfg.buf ? ESOCK_MPA_EV_ULPDU : ESOCK_MPA_EV_END;
	ev->data = rx->cfg.buf;
	ev->len = rx->cfg.buf ? rx->ulpdu_len : 0;
	fpdu_done(rx, ev, want, rx->crc);
	return (ssize_t)n;
}

/*
 * Fast path (buffered mode or cfg.whole, no markers): a whole FPDU at the
 * start of the input is checked with one CRC call over its contiguous octets
 * and handed out in place, without a copy.  Returns the octets consumed, 0 when the
 * slow path must run, or a terminal error.
 */
static ssize_t rx_whole(struct esock_mpa_rx *rx, const uint8_t *p, size_t len,
			struct esock_mpa_ev *ev)
{
	size_t ulen, body;
	uint32_t crc_rx, crc_calc;

	if (len < ESOCK_MPA_LEN_LEN)
		return 0;
	ulen = esock_get_be16(p);
	body = ESOCK_MPA_LEN_LEN + ulen + esock_mpa_pad_len(ulen);
	if (ulen > rx->cfg.max_ulpdu || len < body + ESOCK_MPA_CRC_LEN)
		return 0; /* the slow path reports an oversize length */
	rx->ulpdu_len = (uint16_t)ulen;
	crc_rx = esock_get_le32(p + body);
	crc_calc = rx->cfg.crc || rx->cfg.tolerant ? esock_crc32c(0, p, body) : 0;
	if (rx->cfg.crc && crc_rx != crc_calc) {
		if (!rx->cfg.tolerant)
			return rx_fail(rx, -EBADMSG, ESOCK_TERM_LLP_CRC);
		rx->ev_flags |= ESOCK_MPA_EVF_CRC_BAD;
	}
	ev->type = ESOCK_MPA_EV_ULPDU;
	ev->data = p + ESOCK_MPA_LEN_LEN;
	ev->len = ulen;
	rx->hdr_pos = rx->pos;
	rx->pos += (uint32_t)(body + ESOCK_MPA_CRC_LEN);
	fpdu_done(rx, ev, crc_rx, crc_calc);
	return (ssize_t)(body + ESOCK_MPA_CRC_LEN);
}

ESOCK_EXPORT ssize_t esock_mpa_rx_feed(struct esock_mpa_rx *rx, const uint8_t *data, size_t len,
				       struct esock_mpa_ev *ev)
{
	size_t used = 0;

	memset(ev, 0, sizeof(*ev));
	if (rx->err)
		return rx->err;
	if ((rx->cfg.buf || rx->cfg.whole) && !rx->cfg.markers && rx->state == RX_LEN &&
	    rx->have == 0) {
		ssize_t n = rx_whole(rx, data, len, ev);

		if (n != 0) {
			ev->ulpdu_len = rx->ulpdu_len;
			return n;
		}
	}
	while (used < len && ev->type == ESOCK_MPA_EV_NONE) {
		const uint8_t *p = data + used;
		size_t left = len - used;
		ssize_t n;

		if (rx->cfg.markers && (rx->pos & (ESOCK_MPA_MARKER_INTERVAL - 1)) < ESOCK_MPA_MARKER_LEN)
			n = rx_marker(rx, p, left);
		else if (rx->state == RX_LEN)
			n = rx_len(rx, p, left, ev);
		else if (rx->state == RX_PEEK)
			n = rx_peek(rx, p, left, ev);
		else if (rx->state == RX_PAYLOAD)
			n = rx_payload(rx, p, left, ev);
		else
			n = rx_trailer(rx, p, left, ev);
		if (n < 0)
			return n;
		used += (size_t)n;
	}
	ev->ulpdu_len = rx->ulpdu_len;
	return (ssize_t)used;
}
