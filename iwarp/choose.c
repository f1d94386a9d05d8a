/* SPDX-License-Identifier: MIT */
/*
 * Which backend new objects get: $ESOCK_BACKEND, read once.
 *   user   the user-level endpoint over kernel TCP (always built);
 *   verbs  rdma-core verbs (kernel siw or an RNIC), when built in;
 *   auto   (the default) verbs when it is built in and this host has an
 *          iWARP device, else user.  Decided once per process for the
 *          endpoint API's objects (a PD comes before any address); DDPMODE
 *          sockets choose per connection (libesock/sock_vb.h).
 * Anything else is a mistake the log says, and creating calls fail with
 * -ENODEV rather than carry on over a backend nobody asked for.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/backend.h"
#include "util/log.h"

#ifdef ESOCK_HAVE_VERBS
bool vb_have_iwarp_device(void); /* kpatch/verbs/vb_dev.c */
#endif

static const struct esock_backend *chosen;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose(void)
{
	const char *v = getenv("ESOCK_BACKEND");

	if (!v || !*v || !strcmp(v, "auto")) {
		chosen = &esock_user_backend;
#ifdef ESOCK_HAVE_VERBS
		if (vb_have_iwarp_device())
			chosen = &esock_verbs_backend;
#endif
	} else if (!strcmp(v, "user")) {
		chosen = &esock_user_backend;
	} else if (!strcmp(v, "verbs")) {
#ifdef ESOCK_HAVE_VERBS
		chosen = &esock_verbs_backend;
#else
		log_error("ESOCK_BACKEND=verbs: this library was built without the verbs backend");
#endif
	} else {
		log_error("ESOCK_BACKEND=%s: not a backend (user, verbs or auto)", v);
	}
	if (chosen)
		log_debug("backend: %s", chosen->name);
}

const struct esock_backend *esock_backend_default(void)
{
	pthread_once(&once, choose);
	return chosen;
}
