/* SPDX-License-Identifier: MIT */
/* One-way record queue in shared memory (shmq.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/shmq.h"
#include "tcpserver/sys.h"

#define MAGIC 0x65736d71u /* "esmq" */
#define QVERSION 2u
#define SKIP 0xffffffffu   /* length of the mark that fills up to the end */
#define DATA_OFF 256u

/* The shared part: each index on a cache line of its own (the two sides write one each). */
struct shared {
	uint32_t magic, version, cap, pad0;
	uint8_t pad1[64 - 16];
	_Atomic uint64_t head;     /* octets published, ever (producer) */
	uint8_t pad2[64 - 8];
	_Atomic uint64_t tail;     /* octets consumed, ever (consumer) */
	uint8_t pad3[64 - 8];
	_Atomic uint32_t sleeping; /* consumer threads asleep (on |seq| or a bell) */
	_Atomic uint32_t seq;      /* futex word: bumped by a commit that found it asleep */
	_Atomic uint64_t rung_ns;  /* when the producer last woke a sleeper (CLOCK_MONOTONIC) */
	_Atomic uint32_t cons_cpu; /* the CPU the consumer last ran on, plus one (0: not told) */
	_Atomic uint32_t sleep_gen; /* bumped by each sleep_begin (and, here, each wake): one ring each */
	uint8_t pad4[64 - 24];
};
_Static_assert(sizeof(struct shared) == DATA_OFF, "the data area starts at DATA_OFF");

struct esock_shmq {
	struct shared *sh;
	uint8_t *data;
	uint32_t cap;        /* read once, checked: never taken from the shared memory again */
	uint64_t head, tail; /* this side's own index (the other is read from |sh|) */
	uint32_t rec;        /* producer: octets of the reserved record; consumer: of the peeked one */
	uint64_t skip;       /* producer: octets of a skip mark before the reserved record */
	uint32_t rung_gen;   /* producer: the consumer's sleep_gen it last rang for */
	bool owed;           /* producer: commit_later published records nobody rang for yet */
	int bell;            /* producer: the consumer's eventfd, or -1 (the futex) */
	bool dead;           /* the other side's words made no sense: nothing more is read or written */
	bool cut;            /* a push or pull failed (the link is gone): what was placed is still read */
	struct esock_shmq_remote remote; /* (push NULL: the two sides share the memory) */
};

/* The octets of this side's copy that the other side's copy must get too (remote queues). */
static void push(struct esock_shmq *q, const void *at, uint32_t len)
{
	if (q->remote.push && q->remote.push(q->remote.arg, (uint32_t)((const uint8_t *)at - (const uint8_t *)q->sh),
					    len) < 0)
		q->cut = true;
}

/* What this call pushed goes now (remote queues). */
static void flush(struct esock_shmq *q)
{
	if (q->remote.flush && q->remote.flush(q->remote.arg) < 0)
		q->cut = true;
}

/* The other side's copy of these octets into |into|, waited for (remote queues). */
static void pull(struct esock_shmq *q, const void *at, uint32_t len, void *into)
{
	if (q->remote.pull && q->remote.pull(q->remote.arg, (uint32_t)((const uint8_t *)at - (const uint8_t *)q->sh),
					    len, into) < 0)
		q->cut = true;
}

void esock_shmq_set_remote(struct esock_shmq *q, const struct esock_shmq_remote *r)
{
	q->remote = r ? *r : (struct esock_shmq_remote){ 0 };
}

static uint32_t rec_len(uint32_t len)
{
	return (uint32_t)((4u + (uint64_t)len + 7) & ~(uint64_t)7);
}

static bool cap_ok(uint32_t cap)
{
	return cap >= ESOCK_SHMQ_MIN && cap <= ESOCK_SHMQ_MAX && (cap & (cap - 1)) == 0;
}

size_t esock_shmq_size(uint32_t cap)
{
	return cap_ok(cap) ? DATA_OFF + (size_t)cap : 0;
}

static struct esock_shmq *handle(struct shared *sh, uint32_t cap)
{
	struct esock_shmq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->sh = sh;
	q->data = (uint8_t *)sh + DATA_OFF;
	q->cap = cap;
	q->bell = -1;
	q->head = atomic_load_explicit(&sh->head, memory_order_acquire);
	q->tail = atomic_load_explicit(&sh->tail, memory_order_acquire);
	return q;
}

struct esock_shmq *esock_shmq_init(void *mem, uint32_t cap)
{
	struct shared *sh = mem;

	if (!mem || !cap_ok(cap) || ((uintptr_t)mem & 63))
		return NULL;
	memset(sh, 0, sizeof(*sh));
	sh->version = QVERSION;
	sh->cap = cap;
	atomic_store(&sh->head, 0);
	atomic_store(&sh->tail, 0);
	atomic_store_explicit((_Atomic uint32_t *)&sh->magic, MAGIC, memory_order_release);
	return handle(sh, cap);
}

struct esock_shmq *esock_shmq_attach(void *mem, size_t len)
{
	struct shared *sh = mem;
	uint32_t cap;

	if (!mem || ((uintptr_t)mem & 63) || len < DATA_OFF ||
	    atomic_load_explicit((_Atomic uint32_t *)&sh->magic, memory_order_acquire) != MAGIC ||
	    sh->version != QVERSION)
		return NULL;
	cap = sh->cap;
	if (!cap_ok(cap) || len < DATA_OFF + (size_t)cap)
		return NULL;
	return handle(sh, cap);
}

void esock_shmq_detach(struct esock_shmq *q)
{
	free(q);
}

uint32_t esock_shmq_max_record(const struct esock_shmq *q)
{
	return q->cap / 2 - 8;
}

static void *fail(struct esock_shmq *q, int *rc, int code)
{
	if (code == -EBADMSG)
		q->dead = true;
	if (rc)
		*rc = code;
	return NULL;
}

void *esock_shmq_reserve(struct esock_shmq *q, uint32_t len, int *rc)
{
	uint64_t tail, used;
	uint32_t rec, pos, room;

	if (q->dead)
		return fail(q, rc, -EBADMSG);
	if (q->cut)
		return fail(q, rc, -EPIPE);
	if (len > esock_shmq_max_record(q))
		return fail(q, rc, -EMSGSIZE);
	rec = rec_len(len);
	tail = atomic_load_explicit(&q->sh->tail, memory_order_acquire);
	used = q->head - tail;
	if (tail > q->head || used > q->cap || (tail & 7))
		return fail(q, rc, -EBADMSG); /* the consumer's index went wild */
	pos = (uint32_t)(q->head & (q->cap - 1));
	room = q->cap - pos;
	q->skip = rec > room ? room : 0;
	if (used + q->skip + rec > q->cap)
		return fail(q, rc, -EAGAIN);
	if (q->skip) { /* (in the part not published yet: the consumer does not look there) */
		uint32_t mark = SKIP;

		memcpy(q->data + pos, &mark, 4);
		pos = 0;
	}
	q->rec = rec;
	if (rc)
		*rc = 0;
	return q->data + pos + 4;
}

uint32_t esock_shmq_cap(const struct esock_shmq *q)
{
	return q->cap;
}

uint32_t esock_shmq_free(struct esock_shmq *q)
{
	uint64_t tail = atomic_load_explicit(&q->sh->tail, memory_order_acquire), used = q->head - tail;

	return q->dead || q->cut || tail > q->head || used > q->cap ? 0 : (uint32_t)(q->cap - used);
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* The reserved record, |len| octets, made the consumer's (no ring). */
static void publish(struct esock_shmq *q, uint32_t len)
{
	uint32_t pos = (uint32_t)((q->head + q->skip) & (q->cap - 1));

	memcpy(q->data + pos, &len, 4);
	if (q->skip) /* (the mark, at the end of the data area) */
		push(q, q->data + (q->head & (q->cap - 1)), 4);
	push(q, q->data + pos, q->rec);
	q->head += q->skip + q->rec;
	q->skip = 0;
	atomic_store_explicit(&q->sh->head, q->head, memory_order_release);
	push(q, &q->sh->head, sizeof(q->sh->head)); /* (after the record: placed in order, one QP) */
}

void esock_shmq_commit_quiet(struct esock_shmq *q, uint32_t len)
{
	publish(q, len);
	flush(q);
}

/* Wakes a consumer that said it sleeps, once per sleep; then sends what was published. */
static void ring(struct esock_shmq *q)
{
	q->owed = false;
	/* (seq_cst: ordered against the consumer's "sleeping, then look again") */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&q->sh->sleeping, memory_order_relaxed)) {
		struct timespec ts;
		uint32_t gen = atomic_load_explicit(&q->sh->sleep_gen, memory_order_relaxed);

		/*
		 * One ring per sleep: every commit until the consumer's wake-up is
		 * seen would ring again (here a system call each, across a network
		 * a Send beyond the receives the consumer keeps posted).  Here the
		 * number moves at each wake too, so that a sleeper left behind by
		 * one that woke (two threads on one bell) is rung by the next commit.
		 */
		if (gen == q->rung_gen) {
			flush(q);
			return;
		}
		q->rung_gen = gen;

		/* (a clock read only here: the wake-up is a system call anyway) */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		atomic_store_explicit(&q->sh->rung_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
				      memory_order_relaxed);
		atomic_fetch_add(&q->sh->seq, 1);
		if (q->remote.ring) {
			push(q, &q->sh->rung_ns, sizeof(q->sh->rung_ns));
			q->remote.ring(q->remote.arg);
		} else if (q->bell >= 0)
			(void)!TSP_SYS(write)(q->bell, &(uint64_t){ 1 }, sizeof(uint64_t));
		else
			futex(&q->sh->seq, FUTEX_WAKE, 1, NULL);
	}
	flush(q);
}

void esock_shmq_commit(struct esock_shmq *q, uint32_t len)
{
	publish(q, len);
	ring(q);
}

void esock_shmq_commit_later(struct esock_shmq *q, uint32_t len)
{
	esock_shmq_commit_quiet(q, len);
	q->owed = true;
}

bool esock_shmq_ring(struct esock_shmq *q)
{
	if (!q->owed)
		return false;
	ring(q);
	return true;
}

void esock_shmq_set_bell(struct esock_shmq *q, int efd)
{
	q->bell = efd;
}

int esock_shmq_sleep_begin(struct esock_shmq *q)
{
	uint64_t far = q->tail; /* (the producer's end over there, if pulled) */

	atomic_fetch_add(&q->sh->sleeping, 1);
	atomic_fetch_add(&q->sh->sleep_gen, 1);
	push(q, &q->sh->sleep_gen, sizeof(q->sh->sleep_gen));
	push(q, &q->sh->sleeping, sizeof(q->sh->sleeping));
	/*
	 * (after both reached the producer: a commit that saw the count with the
	 * last sleep's number, and did not ring, is seen here)
	 */
	pull(q, &q->sh->head, sizeof(q->sh->head), &far);
	atomic_thread_fence(memory_order_seq_cst);
	if (q->dead || q->cut)
		return 1; /* (do not sleep on a dead link: the next look says so) */
	return atomic_load_explicit(&q->sh->head, memory_order_acquire) != q->tail || far != q->tail;
}

void esock_shmq_sleep_end(struct esock_shmq *q)
{
	if (!q->remote.push)
		atomic_fetch_add(&q->sh->sleep_gen, 1);
	atomic_fetch_sub(&q->sh->sleeping, 1);
	push(q, &q->sh->sleeping, sizeof(q->sh->sleeping));
	flush(q);
}

uint64_t esock_shmq_rung_ns(const struct esock_shmq *q)
{
	return atomic_load_explicit(&q->sh->rung_ns, memory_order_relaxed);
}

void esock_shmq_set_cpu(struct esock_shmq *q, int cpu)
{
	uint32_t v = cpu >= 0 ? (uint32_t)cpu + 1 : 0;

	if (atomic_load_explicit(&q->sh->cons_cpu, memory_order_relaxed) != v) {
		atomic_store_explicit(&q->sh->cons_cpu, v, memory_order_relaxed);
		push(q, &q->sh->cons_cpu, sizeof(q->sh->cons_cpu));
		flush(q);
	}
}

int esock_shmq_consumer_cpu(const struct esock_shmq *q)
{
	uint32_t v = atomic_load_explicit(&q->sh->cons_cpu, memory_order_relaxed);

	return v && v <= 1u << 20 ? (int)(v - 1) : -1; /* (the other side's word: a hint, bounded) */
}

unsigned esock_shmq_sleepers(const struct esock_shmq *q)
{
	return atomic_load_explicit(&q->sh->sleeping, memory_order_relaxed);
}

const void *esock_shmq_peek(struct esock_shmq *q, uint32_t *len, int *rc)
{
	for (;;) {
		uint64_t head, avail;
		uint32_t pos, n, room;

		if (q->dead)
			return fail(q, rc, -EBADMSG);
		head = atomic_load_explicit(&q->sh->head, memory_order_acquire);
		avail = head - q->tail;
		if (head < q->tail || avail > q->cap || (head & 7))
			return fail(q, rc, -EBADMSG); /* the producer's index went wild */
		if (!avail)
			return fail(q, rc, q->cut ? -EPIPE : -EAGAIN); /* (cut: all that was placed is read) */
		pos = (uint32_t)(q->tail & (q->cap - 1));
		room = q->cap - pos;
		memcpy(&n, q->data + pos, 4); /* (read once: the other side may change it) */
		if (n == SKIP) {
			if (room > avail)
				return fail(q, rc, -EBADMSG);
			q->tail += room;
			atomic_store_explicit(&q->sh->tail, q->tail, memory_order_release);
			push(q, &q->sh->tail, sizeof(q->sh->tail));
			flush(q);
			continue;
		}
		if (n > esock_shmq_max_record(q) || rec_len(n) > room || rec_len(n) > avail)
			return fail(q, rc, -EBADMSG);
		q->rec = rec_len(n);
		*len = n;
		if (rc)
			*rc = 0;
		return q->data + pos + 4;
	}
}

void esock_shmq_release(struct esock_shmq *q)
{
	q->tail += q->rec;
	q->rec = 0;
	atomic_store_explicit(&q->sh->tail, q->tail, memory_order_release);
	push(q, &q->sh->tail, sizeof(q->sh->tail));
	flush(q);
}

int esock_shmq_wait(struct esock_shmq *q, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	uint32_t seen = atomic_load(&q->sh->seq);
	int rc = 0;

	if (q->remote.push)
		return -EOPNOTSUPP; /* (no futex across the network: the consumer sleeps on |ring|) */
	atomic_fetch_add(&q->sh->sleeping, 1);
	atomic_fetch_add(&q->sh->sleep_gen, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&q->sh->head, memory_order_acquire) == q->tail &&
	    futex(&q->sh->seq, FUTEX_WAIT, seen, timeout_ms < 0 ? NULL : &ts) < 0) {
		if (errno == ETIMEDOUT)
			rc = -ETIMEDOUT;
		else if (errno == EINTR)
			rc = -EINTR;
		/* (EAGAIN: a commit bumped |seq| meanwhile: look again) */
	}
	atomic_fetch_add(&q->sh->sleep_gen, 1);
	atomic_fetch_sub(&q->sh->sleeping, 1);
	return rc;
}
