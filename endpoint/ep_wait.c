/* SPDX-License-Identifier: MIT */
/*
 * How a waiter tells time and spins before it sleeps (ep_spin, ep_sock.h):
 * the clock every endpoint timeout is measured on, the short yield loop
 * that catches an answer from a peer on the same or the other CPU without a
 * wake-up, and the window a CQ's waits learn for it (ep_spin.h).
 */
#include "config.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "endpoint/ep.h"
#include "endpoint/ep_spin.h"
#include "util/env.h"
#include "util/tls.h"

#define SPIN_LOST_US 200     /* a spin round this long: the CPU went to somebody else, unless it paid (EP_SPIN_PAID) */
#define SPIN_OFF_US 1000000  /* then no spinning for this long (this thread) */

static ESOCK_TLS int64_t spin_off_until; /* ep_now_us() before which this thread does not spin */
static ESOCK_TLS bool spin_long;          /* the last yield took a slice; not yet judged */

int64_t ep_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ep_now_ms(void)
{
	return ep_now_us() / 1000;
}

static int spin_fixed_us(void);
static int spin_cap_us(void);

/* A new CQ's window, and the one of a spin that no CQ learns for. */
static int first_us(void)
{
	int fixed = spin_fixed_us();

	if (fixed >= 0)
		return fixed;
	return EP_SPIN_FIRST_US < spin_cap_us() ? EP_SPIN_FIRST_US : spin_cap_us();
}

bool ep_spin(int64_t *spin_end)
{
	return ep_spin_for(spin_end, first_us());
}

bool ep_spin_for(int64_t *spin_end, int window_us)
{
	int64_t t0, t;

	/* (no sched_yield in a sandbox; a window of 0: no spin, not even a clock read) */
	if (atomic_load(&ep_restricted) || (window_us <= 0 && !*spin_end))
		return false;
	t0 = ep_now_us();
	if (spin_long) /* (a caller that does not tell what it found: lost) */
		ep_spin_found(0);
	if (!*spin_end) {
		if (t0 < spin_off_until)
			return false;
		*spin_end = t0 + window_us;
	}
	if (t0 >= *spin_end)
		return false;
	sched_yield();
	t = ep_now_us();
	spin_long = t - t0 > SPIN_LOST_US;
	return true;
}

void ep_spin_found(int n)
{
	/*
	 * A yield that took a whole slice (milliseconds) gave the CPU to
	 * another busy thread.  When that was the peer on this CPU, writing
	 * small messages to us, it comes back with a batch of them: the yield
	 * let the writer fill segments, where a sleeping reader is woken (and
	 * preempts the writer) every few messages (4 KiB socket stream on one
	 * CPU: 0.71x TCP sleeping, 0.8x yielding).  Large messages make few
	 * wake-ups anyway, and their writer waits for the unsent bound
	 * (ep_sockbuf.c): there sleeping does better (64 KiB stream 0.95x
	 * against 0.87x).  With one answer or none, the slice went to somebody
	 * else: on a loaded machine spinning costs that every time, so sleep
	 * instead (a wake-up gets the CPU back at once) for a while.
	 */
	if (spin_long && n < EP_SPIN_PAID)
		spin_off_until = ep_now_us() + SPIN_OFF_US;
	spin_long = false;
}

void ep_spin_window_init(atomic_int *w)
{
	atomic_init(w, first_us());
}

int ep_spin_window(atomic_int *w)
{
	return atomic_load_explicit(w, memory_order_relaxed);
}

void ep_spin_learn(atomic_int *w, int64_t waited_us)
{
	int old = atomic_load_explicit(w, memory_order_relaxed), nw;

	if (spin_fixed_us() >= 0)
		return;
	/* (Two waiters of one CQ may race here: either's lesson is a fine window.) */
	if ((nw = ep_spin_next(old, waited_us, false, spin_cap_us())) != old)
		atomic_store_explicit(w, nw, memory_order_relaxed);
}

/*
 * A fixed window, no learning: $ESOCK_SPIN_US (for experiments and for
 * a machine whose best window is known); -1 when unset.
 */
static int spin_fixed_us(void)
{
	static atomic_int v = -2;
	int s = atomic_load_explicit(&v, memory_order_relaxed);

	if (s == -2) {
		s = esock_env_int("ESOCK_SPIN_US", -1, 0, 1000000);
		atomic_store(&v, s);
	}
	return s;
}

/* The longest window a CQ learns: $ESOCK_SPIN_MAX_US (0: never spin). */
static int spin_cap_us(void)
{
	static atomic_int v = -1;
	int s = atomic_load_explicit(&v, memory_order_relaxed);

	if (s < 0) {
		s = esock_env_int("ESOCK_SPIN_MAX_US", EP_SPIN_CAP_US, 0, 1000000);
		atomic_store(&v, s);
	}
	return s;
}
