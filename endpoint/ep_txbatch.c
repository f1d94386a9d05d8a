/* SPDX-License-Identifier: MIT */
/*
 * Transmit batches: several FPDUs planned by the MPA transmitter, gathered
 * into one iovec and written with one sendmsg.  The MPA plan points into
 * the transmitter's scratch (length, pad, CRC, markers) and the QP's header
 * scratch, which the next plan reuses; those few octets are copied into the
 * batch, while payload pieces keep pointing at registered memory; a small
 * FPDU is written whole into the scratch instead.  A short write resumes
 * where it stopped.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "endpoint/ep_spare.h"
#include "libc/real.h"

static void spill_put(struct ep_batch *b)
{
	if (b->spill)
		ep_spare_put(EP_SPARE_SPILL, b->spill);
	b->spill = NULL;
}

struct ep_txwork *ep_txwork_get(bool crc, bool markers, uint32_t pos, bool pack)
{
	bool fresh;
	struct ep_txwork *w = ep_spare_get(EP_SPARE_TX, sizeof(*w), &fresh);

	if (!w)
		return NULL;
	if (fresh) {
		esock_mpa_tx_init(&w->tx, crc, markers, pos);
		w->batch.spill = NULL;
	} else {
		/* Given back with its plan written out (left 0): only the stream settings differ. */
		w->tx.crc = crc;
		w->tx.markers = markers;
		w->tx.pos = pos;
	}
	ep_batch_reset(&w->batch);
	w->batch.pack = pack;
	return w;
}

uint32_t ep_txwork_put(struct ep_txwork *w)
{
	uint32_t pos = w->tx.pos;

	spill_put(&w->batch);
	ep_spare_put(EP_SPARE_TX, w);
	return pos;
}

void ep_batch_reset(struct ep_batch *b)
{
	spill_put(b); /* (a batch given up unwritten) */
	b->cnt = b->next = 0;
	b->left = b->used = b->done = 0;
	b->ends_msg = b->eor = false;
	b->sq_built = 0;
}

/*
 * Half the CPU's L2 cache, from 128 KiB to 1 MiB (256 KiB when unknown).
 * A batch's payload is read twice: by its FPDUs' CRCs as they are framed,
 * then by the kernel's copy into the socket when the batch is written.
 * While the batch and that copy's destination fit in L2 the second read is
 * a hit; a batch larger than L2 has lost its start by then and the copy
 * reads it from farther away.  1 MiB batches on a 512 KiB L2: Send, Write
 * and Read of 1 MiB messages at 0.72-0.80x TCP on one CPU, 256 KiB batches
 * 0.88-1.09x (docs/benchmarks.md, "The batch within the L2 cache").
 */
size_t ep_batch_bytes(void)
{
	static atomic_size_t v;
	size_t b = atomic_load_explicit(&v, memory_order_relaxed);

	if (!b) {
		long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

		b = l2 > 0 ? (size_t)l2 / 2 : 256u << 10;
		b = b < (128u << 10) ? 128u << 10 : b > (1u << 20) ? 1u << 20 : b;
		atomic_store_explicit(&v, b, memory_order_relaxed);
	}
	return b;
}

/* Asked at load, before a sandbox could forbid what sysconf reads on some systems. */
__attribute__((constructor)) static void batch_bytes_at_load(void)
{
	(void)ep_batch_bytes();
}

bool ep_batch_room(const struct ep_batch *b)
{
	return b->cnt + ESOCK_MPA_TX_IOV_MAX <= EP_BATCH_IOV &&
	       b->used + EP_BATCH_FPDU_SCRATCH <= sizeof(b->scratch) && b->left < ep_batch_bytes();
}

void ep_batch_add(struct ep_batch *b, struct esock_mpa_tx *tx, const void *lo, size_t span)
{
	int cnt;
	const struct iovec *iov = esock_mpa_tx_iov(tx, &cnt);
	const uint8_t *l = lo, *h = l + span;

	for (int i = 0; i < cnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		struct iovec *d = &b->iov[b->cnt++];

		*d = iov[i];
		if (p >= l && p < h) { /* scratch of the QP: keep a copy */
			memcpy(b->scratch + b->used, p, iov[i].iov_len);
			d->iov_base = b->scratch + b->used;
			b->used += iov[i].iov_len;
		}
		b->left += iov[i].iov_len;
	}
	esock_mpa_tx_advance(tx, tx->left);
}

int ep_batch_frame(struct ep_batch *b, struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt)
{
	uint8_t *at = b->scratch + b->used;
	ssize_t n = esock_mpa_tx_frame(tx, ulpdu, cnt, at, sizeof(b->scratch) - b->used);
	struct iovec *last = b->cnt ? &b->iov[b->cnt - 1] : NULL;

	if (n < 0)
		return (int)n;
	if (last && (uint8_t *)last->iov_base + last->iov_len == at)
		last->iov_len += (size_t)n;
	else
		b->iov[b->cnt++] = (struct iovec){ at, (size_t)n };
	b->used += (size_t)n;
	b->left += (size_t)n;
	return 0;
}

/* Records |n| written octets. */
static void advance(struct ep_batch *b, size_t n)
{
	b->left -= n;
	b->done += n;
	while (n) {
		struct iovec *v = &b->iov[b->next];

		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		b->next++;
	}
}

/* The unwritten rest as one piece when small: the kernel takes it cheaper. */
static size_t flatten(struct ep_batch *b)
{
	size_t k = 0;

	if (b->cnt - b->next < 2 || b->left > sizeof(b->small))
		return 0;
	for (int i = b->next; i < b->cnt; i++) {
		memcpy(b->small + k, b->iov[i].iov_base, b->iov[i].iov_len);
		k += b->iov[i].iov_len;
	}
	return k;
}

int ep_batch_write(struct ep_batch *b, int fd)
{
	while (b->left) {
		struct iovec one = { b->small, 0 };
		struct msghdr mh = { .msg_iov = b->iov + b->next, .msg_iovlen = (size_t)(b->cnt - b->next) };
		ssize_t n;

		if ((one.iov_len = flatten(b))) {
			mh.msg_iov = &one;
			mh.msg_iovlen = 1;
		}
		/*
		 * MSG_EOR at the end of a message: kernel TCP then starts the next
		 * message in a new segment instead of appending it to this one's
		 * tail, so FPDUs keep starting TCP segments (RFC 5044 §4.5 alignment),
		 * unless the peer is known to take them packed and the message fits
		 * one FPDU (ep_tx.c).
		 */
		int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (b->eor ? MSG_EOR : 0) |
			    (b->more ? MSG_MORE : 0);

		/*
		 * One piece goes with send(): sendmsg's msghdr and iovec copies
		 * cost a 64-octet ping-pong ~3 % here (tools/bench: the kernel
		 * checks every user copy).
		 */
		if (atomic_load(&ep_restricted))
			n = ep_restricted_writev(fd, mh.msg_iov, (int)mh.msg_iovlen);
		else if (mh.msg_iovlen == 1)
			n = REAL(send)(fd, mh.msg_iov[0].iov_base, mh.msg_iov[0].iov_len, flags);
		else
			n = REAL(sendmsg)(fd, &mh, flags);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		advance(b, (size_t)n);
	}
	b->cnt = b->next = 0;
	b->used = 0;
	b->more = false;
	spill_put(b);
	return 1;
}

/*
 * Whether |p| lies in the batch itself (its scratch).  (Never in its spill:
 * a batch is owned once, when it is empty of everything else, and the spill
 * is given back when the batch is written.)
 */
static bool held(const struct ep_batch *b, const uint8_t *p)
{
	const uint8_t *lo = (const uint8_t *)b;

	return p >= lo && p < lo + sizeof(*b);
}

bool ep_batch_own(struct ep_batch *b)
{
	uint8_t *dst;
	size_t need = 0;

	for (int i = b->next; i < b->cnt; i++)
		if (!held(b, b->iov[i].iov_base))
			need += b->iov[i].iov_len;
	if (need <= sizeof(b->scratch) - b->used) {
		dst = b->scratch + b->used;
		b->used += need;
	} else {
		bool fresh;

		if (b->spill || need > EP_SEND_NOW_BIG ||
		    !(b->spill = ep_spare_get(EP_SPARE_SPILL, EP_SEND_NOW_BIG, &fresh)))
			return false;
		dst = b->spill;
	}
	for (int i = b->next; i < b->cnt; i++) {
		struct iovec *v = &b->iov[i];

		if (held(b, v->iov_base))
			continue;
		memcpy(dst, v->iov_base, v->iov_len);
		v->iov_base = dst;
		dst += v->iov_len;
	}
	return true;
}
