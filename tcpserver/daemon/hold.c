/* SPDX-License-Identifier: MIT */
/*
 * Held sends: a response a host writes in pieces (nginx: the header with
 * writev, then the body with sendfile, both posted, a few microseconds
 * apart) goes to TCP whole, in one segment and one system call, where each
 * piece sent at once is a segment (and an acknowledgment, and a wake-up of
 * the reader) of its own.
 *
 * A send that may have a follower waits in its socket's queue (the ring of
 * asynchronous send, not yet handed to TCP) for the host's next request:
 * a send on the same socket joins it and both go (a hit); anything else, the
 * host going to sleep, or the window passing, sends it alone (a miss: the
 * same system call as before, later by the window).  A send is held when
 * the next queued request is a send on it (certain), or, speculatively,
 * while this host's holds mostly hit (a probe now and then when they do
 * not: a program that writes each response at once stops paying the
 * window).  The window is learnt from the gaps of hits, bounded by
 * HOLD_CAP_US.  -m turns holding off.
 */
#include "config.h"

#include "tcpserver/daemon/tsd.h"

#define HOLD_CAP_US 30  /* the longest a send waits for its follower */
#define HOLD_MIN_US 3
#define TRUST_MAX 16    /* hits in a row it takes to be sure again */
#define PROBE_EVERY 64  /* while holds miss: one send in this many held anyway */
#define GUESS_MAX 4096  /* a first piece held on a guess is this small (a header) */

static int window_us(const struct host *h)
{
	int w = 2 * h->hold_gap_us;

	return w < HOLD_MIN_US ? HOLD_MIN_US : w > HOLD_CAP_US ? HOLD_CAP_US : w;
}

bool hold_send(struct host *h, uint32_t handle, const struct tsock *s, uint32_t len, bool certain)
{
	if (d.no_hold || s->corked || h->held || (!certain && len > GUESS_MAX))
		return false;
	if (!certain && h->hold_trust < 0 && ++h->hold_probe % PROBE_EVERY != 0)
		return false;
	if (!certain && esock_shmq_sleepers(h->resp))
		return false; /* (it sleeps: nothing follows) */
	h->held = handle;
	h->held_at_us = now_us();
	h->held_until_us = h->held_at_us + (certain ? HOLD_CAP_US : window_us(h));
	h->holds++;
	d.nheld++;
	return true;
}

/* The held send goes, joined by its follower (|hit|) or alone. */
void hold_end(int hi, bool hit)
{
	struct host *h = &d.hosts[hi];
	uint32_t handle = h->held;
	struct tsock *s = sock_of(h, handle);

	if (!handle)
		return;
	h->held = 0;
	d.nheld--;
	if (hit) {
		int gap = (int)(now_us() - h->held_at_us);

		h->hold_hits++;
		h->hold_gap_us += (gap - h->hold_gap_us) / 4; /* (a moving mean) */
		h->hold_trust = h->hold_trust < TRUST_MAX ? h->hold_trust + 1 : TRUST_MAX;
	} else {
		h->hold_trust = h->hold_trust > -TRUST_MAX ? h->hold_trust - 2 : -TRUST_MAX;
	}
	if (!s || s->fd < 0 || !s->olen)
		return;
	flush_out(h, s);
	/* (TCP did not take it all: the rest waits for room, as any queued octets) */
	if (!interest(hi, handle, s) || !credit(h, handle, s))
		host_drop(hi, "it does not read its events");
}

/* A held socket goes away (closed, or its host): nothing of it is sent by hold_end. */
void hold_forget(struct host *h, uint32_t handle)
{
	if (h->held && h->held == handle) {
		h->held = 0;
		d.nheld--;
	}
}

/*
 * In the loop: held sends whose window passed, or whose host sleeps, go.
 * Returns the milliseconds the loop may sleep: 0 while a send is held
 * (the window is microseconds: it spins), else -1.
 */
int hold_expire(void)
{
	int64_t now;

	if (!d.nheld)
		return -1;
	now = now_us();
	for (int i = 0; i < d.max_hosts && d.nheld; i++) {
		struct host *h = &d.hosts[i];

		if (h->used && h->held && (now >= h->held_until_us || esock_shmq_sleepers(h->resp)))
			hold_end(i, false);
	}
	return d.nheld ? 0 : -1;
}
