/* SPDX-License-Identifier: MIT */
/*
 * Answers and events into a host's response queue (esock_shmq): the one way
 * anything of tcpserverd reaches a host.
 */
#include "config.h"

#include <string.h>

#include "tcpserver/daemon/tsd.h"

/*
 * Puts |m| (a response or event) into the host's queue; |quiet|: without
 * waking the host (esock_shmq_commit_quiet), while the queue is three
 * quarters free.  False: the host does not read it.
 *
 * A sleeping host is woken once per round of the loop, not at the round's
 * first answer: woken at the first, it would often take that one and sleep
 * again before the next came, and each wake-up costs both sides a system
 * call and, on a virtual machine, the halted CPU's exit (15-20 us each way
 * here, docs/tcpserver.md).  So while more of the round's work follows
 * (d.more_follows: the hosts' queues, events of the batch before its last)
 * an answer owes its ring to the round's end (answer_rings); the last
 * event's answers ring at once, so that a lone request (one client) waits
 * for nothing behind it.  The answers are in the queue at once for a host
 * that is awake.
 */
bool answer_ex(struct host *h, struct esock_tsp_msg *m, bool quiet)
{
	int n = esock_tsp_encode(m, d.out, sizeof(d.out)), rc;
	uint8_t *rec;

	if (n < 0)
		return false;
	/* (a request the host posted, whatever its op, waits for nothing: ESOCK_TSP_ID_POSTED) */
	quiet = (quiet || (m->h.type == ESOCK_TSP_RESP && (m->h.id & ESOCK_TSP_ID_POSTED))) &&
		esock_shmq_free(h->resp) > esock_shmq_cap(h->resp) / 4 * 3;
	if (!(rec = esock_shmq_reserve(h->resp, (uint32_t)n, &rc)))
		return false; /* (a full queue: a synchronous host never lets that happen) */
	memcpy(rec, d.out, (size_t)n);
	if (quiet) {
		esock_shmq_commit_quiet(h->resp, (uint32_t)n);
	} else if (d.ring_each || !d.more_follows) {
		esock_shmq_commit(h->resp, (uint32_t)n);
	} else {
		esock_shmq_commit_later(h->resp, (uint32_t)n);
		d.rings_owed += !h->ring_owed;
		h->ring_owed = true;
	}
	if (m->result < 0)
		h->failed++;
	return true;
}

bool answer(struct host *h, struct esock_tsp_msg *m)
{
	return answer_ex(h, m, false);
}

bool reply(struct host *h, const struct esock_tsp_hdr *q, int result)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_RESP, .op = q->op, .id = q->id, .sock = q->sock },
				   .result = result };

	return answer(h, &m);
}

void answer_rings(void)
{
	if (!d.rings_owed) /* (twice a round of the loop: no walk over the hosts for nothing) */
		return;
	d.rings_owed = 0;
	for (int i = 0; i < d.max_hosts; i++)
		if (d.hosts[i].used && d.hosts[i].ring_owed) {
			d.hosts[i].ring_owed = false;
			esock_shmq_ring(d.hosts[i].resp);
		}
}
