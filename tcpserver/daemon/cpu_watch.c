/* SPDX-License-Identifier: MIT */
/*
 * Whether tcpserverd's CPU is its own: spinning for work pays only there.
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "endpoint/ep_spin.h"
#include "tcpserver/daemon/tsd.h"

/*
 * Is tcpserverd's CPU shared with another busy thread?  Spinning there takes
 * the CPU from it until the scheduler preempts tcpserverd, which then waits
 * a whole slice (milliseconds) with the hosts' calls in its queues; a yield
 * gives the CPU away for a slice as well.  Sleeping in epoll as soon as there
 * is no work costs the hosts a bell per call instead, and a wake-up preempts
 * the busy thread.  The scheduler's own count says which: the time this
 * thread waited on the run queue while runnable (/proc/thread-self/schedstat),
 * looked at every CPU_WINDOW_US while spinning.  Waits of CPU_WAIT_US per
 * slice on average, CPU_WAIT_SHARE of the window in all, two windows in a
 * row, mean somebody else holds the CPU for long stretches (a thread that
 * runs briefly, a host or a load generator, makes waits of 10-20 us): then
 * no spinning for CPU_HOLD_US, doubled (to CPU_HOLD_MAX_US) each time the
 * window of spinning after the hold finds it shared again.  Without the file
 * (no schedstat) a yield's time tells (a yield that gave the CPU away).
 */
#define CPU_WINDOW_US 10000
#define CPU_WAIT_US 100
#define CPU_WAIT_SHARE 50 /* 1/50 of the window */
#define CPU_HOLD_US 100000
#define CPU_HOLD_MAX_US 2000000

static struct {
	int fd;                /* /proc/thread-self/schedstat, -1: none */
	int64_t at_us, until_us, hold_us;
	uint64_t waited_ns, slices;
	unsigned hits;         /* windows in a row that found it shared */
	bool shared, retry, yield_shared;
} cpuq = { .fd = -1, .hold_us = CPU_HOLD_US };

static bool schedstat(uint64_t *waited_ns, uint64_t *slices)
{
	char buf[128];
	unsigned long long run, wait, n;
	ssize_t len = pread(cpuq.fd, buf, sizeof(buf) - 1, 0);

	if (len <= 0)
		return false;
	buf[len] = 0;
	if (sscanf(buf, "%llu %llu %llu", &run, &wait, &n) != 3)
		return false;
	*waited_ns = wait;
	*slices = n;
	return true;
}

void cpu_watch_open(void)
{
	if ((cpuq.fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) >= 0 &&
	    !schedstat(&cpuq.waited_ns, &cpuq.slices)) {
		close(cpuq.fd);
		cpuq.fd = -1;
	}
	cpuq.at_us = now_us();
}

/* True while tcpserverd should not spin (its CPU is shared). */
bool cpu_shared(int64_t now)
{
	uint64_t w, n;
	bool busy;

	if (cpuq.fd < 0)
		return false; /* (yields only, in loop) */
	if (cpuq.shared) {
		if (now < cpuq.until_us)
			return true;
		cpuq.shared = false; /* a window of spinning, to see */
		cpuq.retry = true;
		(void)schedstat(&cpuq.waited_ns, &cpuq.slices);
		cpuq.at_us = now;
		return false;
	}
	if (now - cpuq.at_us < CPU_WINDOW_US || !schedstat(&w, &n))
		return false;
	busy = n > cpuq.slices && w - cpuq.waited_ns > (uint64_t)CPU_WAIT_US * 1000 * (n - cpuq.slices) &&
	       w - cpuq.waited_ns > (uint64_t)(now - cpuq.at_us) * 1000 / CPU_WAIT_SHARE;
	/* (two windows in a row, or the one after a hold: a process starting beside it is not a hog) */
	cpuq.hits = busy ? cpuq.hits + 1 : 0;
	if (busy && (cpuq.hits >= 2 || cpuq.retry)) {
		if (!cpuq.retry)
			cpuq.hold_us = CPU_HOLD_US;
		logv("CPU shared (waited %llu us in %d slices of %lld us): no spinning for %lld ms\n",
		     (unsigned long long)(w - cpuq.waited_ns) / 1000, (int)(n - cpuq.slices),
		     (long long)(now - cpuq.at_us), (long long)cpuq.hold_us / 1000);
		cpuq.shared = true;
		cpuq.until_us = now + cpuq.hold_us;
		cpuq.hold_us = cpuq.hold_us * 2 > CPU_HOLD_MAX_US ? CPU_HOLD_MAX_US : cpuq.hold_us * 2;
		cpuq.hits = 0;
	}
	cpuq.retry = false;
	cpuq.waited_ns = w;
	cpuq.slices = n;
	cpuq.at_us = now;
	return cpuq.shared;
}

/*
 * A round of spinning without work: a host on this CPU (or a thread that
 * runs a little now and then) gets it to make its next call.  A yield that
 * gave the CPU away says so: then every round yields, else one in sixteen
 * (a yield between looks delays the look on a core of its own).  Not beside
 * a busy thread (cpu_shared): there a yield gives away a whole slice.
 */
void cpu_spin_yield(void)
{
	static unsigned idle_rounds;
	int64_t t0;

	if (!cpuq.yield_shared && !d.sent && (++idle_rounds & 15) != 0)
		return;
	d.sent = false;
	t0 = now_us();
	sched_yield();
	cpuq.yield_shared = now_us() - t0 > 5;
}

/*
 * How long tcpserverd spins after its last work before it sleeps: a window
 * learnt as a CQ's is (ep_spin.h; the default, capped by -P), or -p's fixed
 * one.  A host's call that rang the bell |waited_us| after the last work,
 * within the cap, says a longer spin would have caught it (sparing the host
 * its bell and tcpserverd its wake-up); a sleep that ended later says the
 * spin was waste (main.c loop: network input teaches nothing).  A thread
 * that wants the CPU meanwhile gets it at the spin's yields
 * (cpu_spin_yield), so a long window costs it a yield's delay, not the
 * window.
 */
static int spin_window_us = EP_SPIN_FIRST_US;

int spin_window(void)
{
	return d.spin_us >= 0 ? d.spin_us : spin_window_us;
}

void spin_learn(int64_t waited_us, bool host_rang)
{
	/*
	 * Only a host's call teaches a longer spin: catching it spares the
	 * host its bell.  The network's input (a client's next request) does
	 * not: spinning for it on a CPU the client shares keeps the client
	 * from sending it.
	 */
	if (host_rang || waited_us > d.spin_cap_us)
		spin_window_us = ep_spin_next(spin_window_us, waited_us, false, d.spin_cap_us);
}
