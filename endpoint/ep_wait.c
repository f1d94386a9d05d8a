/* SPDX-License-Identifier: MIT */
/*
 * How a waiter tells time and spins before it sleeps (ep_spin, ep_sock.h):
 * the clock every endpoint timeout is measured on, and the short yield loop
 * that catches an answer from a peer on the same or the other CPU without a
 * wake-up.
 */
#include "config.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "endpoint/ep.h"
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

static int spin_us(void);

bool ep_spin(int64_t *spin_end)
{
	int64_t t0, t;

	if (atomic_load(&ep_restricted))
		return false; /* (no sched_yield in a sandbox) */
	t0 = ep_now_us();
	if (spin_long) /* (a caller that does not tell what it found: lost) */
		ep_spin_found(0);
	if (!*spin_end) {
		if (t0 < spin_off_until)
			return false;
		*spin_end = t0 + spin_us();
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

/* How long a waiter polls before it sleeps: $ESOCK_SPIN_US, default 50 µs. */
static int spin_us(void)
{
	static atomic_int v = -1;
	int s = atomic_load_explicit(&v, memory_order_relaxed);

	if (s < 0) {
		s = esock_env_int("ESOCK_SPIN_US", 50, 0, 1000000);
		atomic_store(&v, s);
	}
	return s;
}
