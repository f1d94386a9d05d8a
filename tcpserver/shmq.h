/* SPDX-License-Identifier: MIT */
/*
 * A one-way queue of records in memory two processes share: the transport
 * of TSP messages between a host process and tcpserverd on one machine.
 * One producer, one consumer, no lock and no system call to pass a record:
 * the producer writes the record, then publishes its end with a release
 * store; the consumer reads the published end with an acquire load.  A
 * consumer with nothing to do may sleep on a futex (esock_shmq_wait); the
 * producer wakes it only when it said it sleeps, so a busy-polling
 * tcpserverd costs the host no system call at all.
 *
 * Records are 8-aligned, each a 4-octet length then the octets, never
 * wrapped: where a record does not fit before the end, a skip mark fills the
 * rest and the record starts over at 0.  The other side may be hostile or
 * broken: everything read from the shared memory is checked before use,
 * and a queue found inconsistent stays dead (-EBADMSG from then on).
 */
#ifndef ESOCK_TCPSERVER_SHMQ_H
#define ESOCK_TCPSERVER_SHMQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ESOCK_SHMQ_MIN (4u * 1024)          /* data area, smallest */
#define ESOCK_SHMQ_MAX (256u * 1024 * 1024) /* and largest */

struct esock_shmq;

/* Octets of shared memory a queue with a data area of |cap| octets needs (0: bad cap). */
size_t esock_shmq_size(uint32_t cap);

/*
 * Lays a new, empty queue over |mem| (esock_shmq_size(cap) octets, 64-aligned,
 * zeroed or not) and returns this side's handle, or NULL (bad cap or
 * alignment, out of memory).  |cap|: a power of two within
 * [ESOCK_SHMQ_MIN, ESOCK_SHMQ_MAX].
 */
struct esock_shmq *esock_shmq_init(void *mem, uint32_t cap);

/* A handle on a queue another process laid over |mem| (|len| octets mapped), or NULL. */
struct esock_shmq *esock_shmq_attach(void *mem, size_t len);

/* Forgets the handle (the shared memory is the caller's). */
void esock_shmq_detach(struct esock_shmq *q);

/* The longest record the queue takes (it must fit twice). */
uint32_t esock_shmq_max_record(const struct esock_shmq *q);

/*
 * Producer: room for a record of |len| octets, to be filled and then
 * published with esock_shmq_commit (same |len|).  NULL when the queue is
 * full for now (errno-free: -EAGAIN via *rc), or *rc = -EMSGSIZE /
 * -EBADMSG.  |rc| may be NULL.
 */
void *esock_shmq_reserve(struct esock_shmq *q, uint32_t len, int *rc);
void esock_shmq_commit(struct esock_shmq *q, uint32_t len);
/*
 * A record the consumer does not wait for (the answer to a call it posted
 * and does not wait on): committed without ringing a sleeping consumer,
 * which finds it when something else wakes it, or at once if it was about
 * to sleep (sleep_begin says records are there).  Nothing may depend on
 * it to wake the consumer.
 */
void esock_shmq_commit_quiet(struct esock_shmq *q, uint32_t len);
/*
 * A record the consumer waits for, whose wake-up may come a little later:
 * committed (and, across a network, sent) now, the ring owed until
 * esock_shmq_ring, so that a batch of records wakes a sleeping consumer
 * once, when the batch is done, instead of at its first record.  The
 * producer must call esock_shmq_ring before it waits for anything itself.
 */
void esock_shmq_commit_later(struct esock_shmq *q, uint32_t len);
/* Rings for what commit_later published, as commit does (once per sleep); false if nothing was owed. */
bool esock_shmq_ring(struct esock_shmq *q);
/* Producer: octets free in the queue now (the consumer may free more meanwhile). */
uint32_t esock_shmq_free(struct esock_shmq *q);
/* Octets the queue holds in all (its |cap|). */
uint32_t esock_shmq_cap(const struct esock_shmq *q);

/*
 * Consumer: the oldest record (its octets and length), or NULL with *rc
 * -EAGAIN (empty) or -EBADMSG (the producer broke the queue).  The record
 * stays until esock_shmq_release.  |rc| may be NULL.
 */
const void *esock_shmq_peek(struct esock_shmq *q, uint32_t *len, int *rc);
void esock_shmq_release(struct esock_shmq *q);

/*
 * Consumer: sleeps until a record is there or |timeout_ms| passed (-1:
 * no limit).  0 (look again), -ETIMEDOUT, -EINTR.  The producer's commit
 * wakes it (a futex, only when a consumer said it sleeps).
 */
int esock_shmq_wait(struct esock_shmq *q, int timeout_ms);

/*
 * A consumer that sleeps elsewhere (tcpserverd in epoll_wait over many
 * queues and its sockets) gives the producer an eventfd to ring instead of
 * the futex: esock_shmq_set_bell on the producer's handle (-1: the futex).
 * Around its own wait it says so: esock_shmq_sleep_begin returns 1 when
 * records are already there (do not sleep), 0 when the producer will ring;
 * esock_shmq_sleep_end after the wait.
 */
void esock_shmq_set_bell(struct esock_shmq *q, int efd);
int esock_shmq_sleep_begin(struct esock_shmq *q);
void esock_shmq_sleep_end(struct esock_shmq *q);
/*
 * Hints for how long to look before sleeping (the other side writes them:
 * never trusted beyond that).  esock_shmq_rung_ns: when the producer last
 * woke a sleeping consumer (CLOCK_MONOTONIC ns), read by the consumer: a
 * record that came while it slept came then, not when it woke.
 * esock_shmq_set_cpu: the consumer says which CPU it runs on (-1: unknown);
 * esock_shmq_consumer_cpu: the producer reads it (-1: not told).
 */
uint64_t esock_shmq_rung_ns(const struct esock_shmq *q);
void esock_shmq_set_cpu(struct esock_shmq *q, int cpu);
int esock_shmq_consumer_cpu(const struct esock_shmq *q);
/* Consumer: threads of this side that said they sleep now (a hint: it may change at once). */
unsigned esock_shmq_sleepers(const struct esock_shmq *q);

/*
 * A queue whose two sides share no memory (the iWARP transport of the TCP
 * Server's cluster variant, docs/tcpserver.md): each side lays a queue of
 * the same |cap| over memory of its own (esock_shmq_init), and every word
 * this side writes for the other (a record and its skip mark, the producer's
 * end, the consumer's position, its sleep count and CPU, when the producer
 * rang) reaches the other side's copy at the same offset through |push|,
 * which an RDMA Write carries.  |ring| replaces the futex and the bell: it
 * wakes a consumer that said it sleeps.  A consumer about to sleep pushes
 * its sleep count and then |pull|s the producer's end into |into| (an RDMA
 * Read, which the peer serves after the Write before it): either that end
 * shows a record, or the producer's next commit sees the count and rings
 * (the shared-memory queue's fences, across the network).  The pulled end
 * only says "do not sleep": it never enters this side's copy, because the
 * Read's answer may pass the producer's Writes of the records before it
 * (a responder's Read Response is not ordered behind its own queued
 * Writes), and a copy whose end ran ahead of its records would be read.  The other copy
 * is checked as shared memory is.  esock_shmq_wait is -EOPNOTSUPP on such a
 * queue (the consumer sleeps on whatever |ring| reaches).  |push| and |pull|
 * return 0 or -errno; a failure cuts the queue (the link is gone): the
 * producer's reserve fails with -EPIPE from then on, the consumer still
 * reads the records placed before and then gets -EPIPE, not -EAGAIN.
 */
struct esock_shmq_remote {
	int (*push)(void *arg, uint32_t off, uint32_t len);
	int (*pull)(void *arg, uint32_t off, uint32_t len, void *into);
	void (*ring)(void *arg);
	void *arg;
	/*
	 * Optional: the pushes of one call may wait to be sent together (one
	 * commit's record and end as one list: one write to the network);
	 * called at the end of each call that pushed.  A pull or ring sends
	 * what waits first.
	 */
	int (*flush)(void *arg);
};
void esock_shmq_set_remote(struct esock_shmq *q, const struct esock_shmq_remote *r);

#endif /* ESOCK_TCPSERVER_SHMQ_H */
