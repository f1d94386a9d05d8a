/* SPDX-License-Identifier: MIT */
/*
 * A call that would block, parked on its socket: its request kept whole, the
 * socket in the epoll set for what it waits for (hosts.c's resume carries it
 * out again when that comes).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tcpserver/daemon/req.h"

int park(struct req *r, uint32_t events)
{
	struct tsock *s = r->s;

	if (!s->parked && !(s->parked = malloc(MSG_MAX)))
		return -1;
	if (s->parked != r->rec)
		memcpy(s->parked, r->rec, r->len);
	s->parked_len = r->len;
	s->park_ev = events;
	if (!interest(r->hi, r->q->h.sock, s))
		return -1;
	r->h->parked++;
	return 0;
}
