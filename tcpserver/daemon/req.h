/* SPDX-License-Identifier: MIT */
/*
 * One request being carried out (calls.c dispatches it to a handler of
 * calls*.c; req.c parks it).  A handler returns what call() returns (1 answered, 0 parked,
 * -1 the host must go), or ANSWER: call() answers with r->m (its result
 * set by done(); data, if any, only with a result of 0 or more).
 */
#ifndef ESOCK_TCPSERVER_DAEMON_REQ_H
#define ESOCK_TCPSERVER_DAEMON_REQ_H

#include "tcpserver/daemon/tsd.h"

struct req {
	struct host *h;
	int hi;                        /* the host's index */
	const struct esock_tsp_msg *q; /* the request, decoded */
	const uint8_t *rec;            /* ... its record: kept when the call parks */
	uint32_t len;
	struct tsock *s;               /* its socket (NULL for the calls on none) */
	struct esock_tsp_msg m;        /* the answer */
};

#define ANSWER 2

static inline int done(struct req *r, int result)
{
	r->m.result = result;
	return ANSWER;
}

/* The answer at once: 1, or -1 (the host does not read). */
static inline int answered(struct req *r, int result)
{
	r->m.result = result;
	return answer(r->h, &r->m) ? 1 : -1;
}

/* A call parked (0) until its socket is ready for |events|; -1: out of memory. */
int park(struct req *r, uint32_t events);

/* calls_io.c */
int call_send(struct req *r);
int call_recv(struct req *r);

/* calls_opt.c */
int call_setsockopt(struct req *r);
int call_getsockopt(struct req *r);
int call_names(struct req *r);

#endif
