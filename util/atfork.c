/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "util/atfork.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#define MAX_HOOKS 32

struct hook {
	enum esock_fork_phase phase;
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};

static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hook hooks[MAX_HOOKS];
static atomic_int nhooks;   /* published with release: entries below it are complete */
static int nrun;            /* how many prepare saw: the same ones run after the fork */

static void run_prepare(void)
{
	nrun = atomic_load_explicit(&nhooks, memory_order_acquire);
	for (int ph = 0; ph < ESOCK_FORK_PHASES; ph++)
		for (int i = 0; i < nrun; i++)
			if ((int)hooks[i].phase == ph && hooks[i].prepare)
				hooks[i].prepare();
}

static void run_after(int child)
{
	for (int ph = ESOCK_FORK_PHASES - 1; ph >= 0; ph--)
		for (int i = nrun - 1; i >= 0; i--) {
			void (*fn)(void) = child ? hooks[i].child : hooks[i].parent;

			if ((int)hooks[i].phase == ph && fn)
				fn();
		}
}

static void run_parent(void)
{
	run_after(0);
}

static void run_child(void)
{
	/* (A thread of the parent may have been registering at the fork.) */
	pthread_mutex_init(&add_lock, NULL);
	run_after(1);
}

static void install(void)
{
	pthread_atfork(run_prepare, run_parent, run_child);
}

int esock_atfork(enum esock_fork_phase phase, void (*prepare)(void), void (*parent)(void),
		 void (*child)(void))
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int n, rc = 0;

	pthread_once(&once, install);
	pthread_mutex_lock(&add_lock);
	n = atomic_load_explicit(&nhooks, memory_order_relaxed);
	if (n == MAX_HOOKS)
		rc = -ENOSPC;
	else {
		hooks[n] = (struct hook){ phase, prepare, parent, child };
		atomic_store_explicit(&nhooks, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&add_lock);
	return rc;
}
