/* SPDX-License-Identifier: MIT */
/*
 * How long a waiter spins before it sleeps, learnt from its own waits.
 *
 * A spin pays when the answer comes before the waiter would have been woken
 * for it: it saves a wake-up (on the VMs measured, 3-60 us across CPUs,
 * depending on the host).  It costs its whole length when the answer comes
 * later.  Neither the wake-up cost nor the peer's answer time is known
 * ahead, so a fixed window fits one machine and one workload: a window
 * shorter than the machine's wake-up is never paid back, a long one burns a
 * CPU for every idle wait.  The rule below (the shape of KVM's halt-polling
 * window) learns it per CQ from when answers come:
 *
 *   caught while spinning          the window is fine as it is;
 *   slept, answer within the cap   a longer spin would have caught it (the
 *                                  time waited includes our own wake-up, so
 *                                  it bounds the answer from above): grow to
 *                                  twice the window or 5/4 of the wait;
 *   slept, answer after the cap    spinning here is waste: halve, and stop
 *                                  spinning once under EP_SPIN_START_US.
 *
 * A window of 0 learns on: answers that come within the cap bring it back
 * to EP_SPIN_START_US.  Pure (no clock, no state of its own): unit-tested.
 */
#ifndef ESOCK_EP_SPIN_H
#define ESOCK_EP_SPIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define EP_SPIN_START_US 10      /* the smallest window worth a spin */
#define EP_SPIN_FIRST_US 50      /* a new CQ's window */
#define EP_SPIN_CAP_US 200       /* the longest window (ESOCK_SPIN_MAX_US) */

/* The window after a wait that took |waited_us| and was or was not |caught| spinning. */
static inline int ep_spin_next(int window_us, int64_t waited_us, bool caught, int cap_us)
{
	int64_t w = window_us;

	if (caught)
		return window_us;
	if (waited_us > cap_us) {
		w = w / 2 > cap_us ? cap_us : w / 2;
		return w < EP_SPIN_START_US ? 0 : (int)w;
	}
	w = w * 2 > waited_us + waited_us / 4 ? w * 2 : waited_us + waited_us / 4;
	if (w < EP_SPIN_START_US)
		w = EP_SPIN_START_US;
	return w > cap_us ? cap_us : (int)w;
}

/*
 * A CQ's window (ep_wait.c): a new one, the current one, and the lesson of
 * a wait that slept, |waited_us| after it began (a wait caught spinning
 * teaches nothing).  $ESOCK_SPIN_US fixes every window (no learning);
 * $ESOCK_SPIN_MAX_US is the cap (default EP_SPIN_CAP_US; 0: no spin).
 */
void ep_spin_window_init(atomic_int *w);
int ep_spin_window(atomic_int *w);
void ep_spin_learn(atomic_int *w, int64_t waited_us);

#endif
