/* SPDX-License-Identifier: MIT */
/*
 * MPA FPDU transmit (RFC 5044 §4.1 format, §4.3 markers, §4.4 CRC, §4.5
 * MULPDU).  Produces a plan: an iovec over the caller's ULPDU pieces and a
 * few scratch octets (length, markers, pad, CRC) held in the tx state.  The
 * payload is never copied; partial writes resume through
 * esock_mpa_tx_advance(), the way siw resumes a socket write mid-FPDU.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/crc32c.h>
#include <esock/mpa.h>

#include "mpa/mpa_wire.h"

/* The fields fit the fixed storage users allocate (the installed header's size). */
_Static_assert(sizeof(struct esock_mpa_tx) == ESOCK_MPA_TX_WORDS * sizeof(uint64_t),
	       "struct esock_mpa_tx outgrew ESOCK_MPA_TX_WORDS: raise it (an ABI change) or shrink the fields");

ESOCK_EXPORT size_t esock_mpa_mulpdu(uint32_t emss, bool markers)
{
	uint64_t overhead = 6 + (emss % 4);
	uint64_t m;

	if (markers)
		overhead += 4 * (((uint64_t)emss + ESOCK_MPA_MARKER_INTERVAL - 1) / ESOCK_MPA_MARKER_INTERVAL);
	if (emss <= overhead)
		return 0;
	m = emss - overhead;
	return m > ESOCK_MPA_ULPDU_MAX ? ESOCK_MPA_ULPDU_MAX : (size_t)m;
}

ESOCK_EXPORT size_t esock_mpa_fpdu_len(size_t ulpdu_len, bool markers, uint32_t pos)
{
	size_t body = ESOCK_MPA_LEN_LEN + ulpdu_len + esock_mpa_pad_len(ulpdu_len) + ESOCK_MPA_CRC_LEN;
	size_t total = body, done = 0;

	if (!markers)
		return body;
	/* Each marker position met before the body is complete adds 4 octets. */
	while (done < body) {
		uint32_t gap = mpa_to_marker(pos);

		if (gap == ESOCK_MPA_MARKER_INTERVAL) {
			total += ESOCK_MPA_MARKER_LEN;
			pos += ESOCK_MPA_MARKER_LEN;
			gap -= ESOCK_MPA_MARKER_LEN;
		}
		if (gap > body - done)
			gap = (uint32_t)(body - done);
		done += gap;
		pos += gap;
	}
	return total;
}

ESOCK_EXPORT void esock_mpa_tx_init(struct esock_mpa_tx *tx, bool crc, bool markers, uint32_t pos)
{
	memset(tx, 0, sizeof(*tx));
	tx->crc = crc;
	tx->markers = markers;
	tx->pos = pos;
}

/* Plan-building context: one FPDU. */
struct plan {
	struct esock_mpa_tx *tx;
	uint32_t hdr_pos;  /* position of ULPDU_Length */
	uint32_t crc;
	int nmarkers;
	bool started;      /* ULPDU_Length placed */
};

static int plan_iov(struct plan *p, const void *base, size_t len)
{
	struct esock_mpa_tx *tx = p->tx;

	if (tx->iovcnt >= ESOCK_MPA_TX_IOV_MAX)
		return -EMSGSIZE;
	tx->iov[tx->iovcnt].iov_base = (void *)(uintptr_t)base;
	tx->iov[tx->iovcnt].iov_len = len;
	tx->iovcnt++;
	tx->left += len;
	tx->pos += (uint32_t)len;
	return 0;
}

/* Emits a marker at the current position (which is a marker position). */
static int plan_marker(struct plan *p)
{
	struct esock_mpa_tx *tx = p->tx;
	uint32_t back = p->started ? tx->pos - p->hdr_pos : 0;
	uint8_t *m;

	if (p->nmarkers >= ESOCK_MPA_MARKERS_MAX || back > 0xffff)
		return -EMSGSIZE;
	m = tx->marker[p->nmarkers++];
	mpa_marker_put(m, (uint16_t)back);
	p->crc = esock_crc32c(p->crc, m, ESOCK_MPA_MARKER_LEN);
	return plan_iov(p, m, ESOCK_MPA_MARKER_LEN);
}

/* Emits |len| octets at |base|, inserting markers; |crc| says whether they
 * are covered by the CRC (everything but the CRC field itself). */
static int plan_piece(struct plan *p, const uint8_t *base, size_t len, bool crc)
{
	while (len > 0) {
		size_t run = len;
		int rc;

		if (p->tx->markers) {
			if (mpa_at_marker(p->tx->pos) && (rc = plan_marker(p)) < 0)
				return rc;
			if (run > mpa_to_marker(p->tx->pos))
				run = mpa_to_marker(p->tx->pos);
		}
		if (crc)
			p->crc = esock_crc32c(p->crc, base, run);
		if ((rc = plan_iov(p, base, run)) < 0)
			return rc;
		base += run;
		len -= run;
	}
	return 0;
}

/* MPA's CRC of a marker-free FPDU: the length field, the ULPDU's pieces, the PAD at |pad|. */
static uint32_t plain_crc(const uint8_t *len_field, const struct iovec *ulpdu, int cnt,
			  const uint8_t *pad, size_t pad_len)
{
	uint32_t crc = esock_crc32c(0, len_field, ESOCK_MPA_LEN_LEN);

	for (int i = 0; i < cnt; i++)
		if (ulpdu[i].iov_len)
			crc = esock_crc32c(crc, ulpdu[i].iov_base, ulpdu[i].iov_len);
	return pad_len ? esock_crc32c(crc, pad, pad_len) : crc;
}

/* Without markers: length, pieces, PAD+CRC as one scratch piece. */
static int plan_plain(struct plan *p, const struct iovec *ulpdu, int cnt, size_t pad)
{
	struct esock_mpa_tx *tx = p->tx;
	int rc = 0;

	p->crc = tx->crc ? plain_crc(tx->len_field, ulpdu, cnt, tx->trailer, pad) : 0;
	plan_iov(p, tx->len_field, ESOCK_MPA_LEN_LEN);
	for (int i = 0; i < cnt && rc == 0; i++)
		if (ulpdu[i].iov_len)
			rc = plan_iov(p, ulpdu[i].iov_base, ulpdu[i].iov_len);
	esock_put_le32(tx->trailer + pad, tx->crc ? p->crc : 0);
	return rc < 0 ? rc : plan_iov(p, tx->trailer, pad + ESOCK_MPA_CRC_LEN);
}

/* With markers: every piece may be cut where a marker falls. */
static int plan_marked(struct plan *p, const struct iovec *ulpdu, int cnt, size_t pad)
{
	struct esock_mpa_tx *tx = p->tx;
	int rc;

	if (mpa_at_marker(tx->pos) && (rc = plan_marker(p)) < 0)
		return rc;
	p->hdr_pos = tx->pos;
	p->started = true;
	if ((rc = plan_piece(p, tx->len_field, ESOCK_MPA_LEN_LEN, true)) < 0)
		return rc;
	for (int i = 0; i < cnt; i++)
		if ((rc = plan_piece(p, ulpdu[i].iov_base, ulpdu[i].iov_len, true)) < 0)
			return rc;
	if ((rc = plan_piece(p, tx->trailer, pad, true)) < 0)
		return rc;
	/* A marker between PAD and CRC is inside the FPDU: cover it first. */
	if (mpa_at_marker(tx->pos) && (rc = plan_marker(p)) < 0)
		return rc;
	esock_put_le32(tx->trailer + pad, tx->crc ? p->crc : 0);
	return plan_piece(p, tx->trailer + pad, ESOCK_MPA_CRC_LEN, false);
}

static int plan_fpdu(struct plan *p, const struct iovec *ulpdu, int cnt, size_t ulen)
{
	struct esock_mpa_tx *tx = p->tx;
	size_t pad = esock_mpa_pad_len(ulen);

	esock_put_be16(tx->len_field, (uint16_t)ulen);
	memset(tx->trailer, 0, pad);
	/* The CRC value goes out least-significant octet first (siw, RFC 3720 B.4). */
	return tx->markers ? plan_marked(p, ulpdu, cnt, pad) : plan_plain(p, ulpdu, cnt, pad);
}

ESOCK_EXPORT ssize_t esock_mpa_tx_build(struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt)
{
	struct plan p = { .tx = tx };
	uint32_t start = tx->pos;
	size_t ulen = 0;
	int rc;

	if (tx->left)
		return -EBUSY;
	if (cnt < 0 || cnt > ESOCK_MPA_TX_PIECES_MAX)
		return -EINVAL;
	for (int i = 0; i < cnt; i++) {
		ulen += ulpdu[i].iov_len;
		if (ulen > ESOCK_MPA_ULPDU_MAX)
			return -EMSGSIZE;
	}
	tx->iovcnt = tx->iov_next = 0;
	rc = plan_fpdu(&p, ulpdu, cnt, ulen);
	if (rc < 0) {
		tx->pos = start;
		tx->iovcnt = tx->iov_next = 0;
		tx->left = 0;
		return rc;
	}
	return (ssize_t)tx->left;
}

/* The checks of a frame built without a plan; the ULPDU's length in |*ulen|. */
static int planless_check(const struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt,
			  size_t *ulen)
{
	if (tx->left)
		return -EBUSY;
	if (tx->markers || cnt < 0 || cnt > ESOCK_MPA_TX_PIECES_MAX)
		return -EINVAL;
	*ulen = 0;
	for (int i = 0; i < cnt; i++)
		*ulen += ulpdu[i].iov_len;
	return *ulen > ESOCK_MPA_ULPDU_MAX ? -EMSGSIZE : 0;
}

ESOCK_EXPORT ssize_t esock_mpa_tx_frame(struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt,
				       uint8_t *out, size_t cap)
{
	size_t ulen, pad, k = ESOCK_MPA_LEN_LEN;
	int rc = planless_check(tx, ulpdu, cnt, &ulen);

	if (rc < 0)
		return rc;
	pad = esock_mpa_pad_len(ulen);
	if (cap < ESOCK_MPA_LEN_LEN + ulen + pad + ESOCK_MPA_CRC_LEN)
		return -ENOBUFS;
	esock_put_be16(out, (uint16_t)ulen);
	for (int i = 0; i < cnt; i++) {
		memcpy(out + k, ulpdu[i].iov_base, ulpdu[i].iov_len);
		k += ulpdu[i].iov_len;
	}
	memset(out + k, 0, pad);
	k += pad;
	/* One CRC call over the contiguous frame: the plan's pieces cost one each. */
	esock_put_le32(out + k, tx->crc ? esock_crc32c(0, out, k) : 0);
	k += ESOCK_MPA_CRC_LEN;
	tx->pos += (uint32_t)k;
	return (ssize_t)k;
}

ESOCK_EXPORT ssize_t esock_mpa_tx_wrap(struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt,
				       uint8_t *head, uint8_t *tail)
{
	size_t ulen, pad;
	int rc = planless_check(tx, ulpdu, cnt, &ulen);

	if (rc < 0)
		return rc;
	pad = esock_mpa_pad_len(ulen);
	esock_put_be16(head, (uint16_t)ulen);
	memset(tail, 0, pad);
	esock_put_le32(tail + pad, tx->crc ? plain_crc(head, ulpdu, cnt, tail, pad) : 0);
	tx->pos += (uint32_t)(ESOCK_MPA_LEN_LEN + ulen + pad + ESOCK_MPA_CRC_LEN);
	return (ssize_t)(pad + ESOCK_MPA_CRC_LEN);
}

ESOCK_EXPORT const struct iovec *esock_mpa_tx_iov(const struct esock_mpa_tx *tx, int *cnt)
{
	*cnt = tx->left ? tx->iovcnt - tx->iov_next : 0;
	return tx->left ? &tx->iov[tx->iov_next] : NULL;
}

ESOCK_EXPORT ssize_t esock_mpa_tx_advance(struct esock_mpa_tx *tx, size_t n)
{
	if (n > tx->left)
		return -EINVAL;
	if (n == tx->left) { /* the common case: the whole plan went out */
		tx->left = 0;
		tx->iov_next = tx->iovcnt;
		return 0;
	}
	tx->left -= n;
	while (n > 0) {
		struct iovec *v = &tx->iov[tx->iov_next];
		size_t k = n < v->iov_len ? n : v->iov_len;

		v->iov_base = (uint8_t *)v->iov_base + k;
		v->iov_len -= k;
		n -= k;
		if (v->iov_len == 0)
			tx->iov_next++;
	}
	/* Skip entries emptied exactly at their end (and zero-length ones). */
	while (tx->iov_next < tx->iovcnt && tx->iov[tx->iov_next].iov_len == 0)
		tx->iov_next++;
	return (ssize_t)tx->left;
}

ESOCK_EXPORT ssize_t esock_mpa_tx_flatten(const struct esock_mpa_tx *tx, uint8_t *buf, size_t cap)
{
	size_t off = 0;

	if (cap < tx->left)
		return -ENOBUFS;
	for (int i = tx->left ? tx->iov_next : tx->iovcnt; i < tx->iovcnt; i++) {
		memcpy(buf + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
		off += tx->iov[i].iov_len;
	}
	return (ssize_t)off;
}
