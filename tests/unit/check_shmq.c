/* SPDX-License-Identifier: MIT */
/*
 * tcpserver/shmq.c, the shared-memory record queue between a host process
 * and tcpserverd: records come out whole and in order across wrap-around,
 * a full queue says so, two processes pass a stream of records (the
 * consumer sleeping when it is empty), and a queue the other side broke is
 * refused, never read outside its memory; the hints for looking or
 * sleeping (when the producer rang, the consumer's CPU) read back.  And
 * the same queue across two memories (the iWARP transport's: words pushed
 * and pulled by hooks): in order, flow control by the consumer's pushes
 * (its control: without them the producer stays full), sleeping and ringing
 * with the count and the record crossing in flight, a broken link, a lying
 * producer.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcpserver/shmq.h"
#include "tests/unit/testutil.h"

#define CAP 4096u

static void *shared_mem(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(m, MAP_FAILED);
	return m;
}

/* A record of |len| octets of |fill|; |later|: its ring owed (esock_shmq_commit_later). */
static void put_ex(struct esock_shmq *q, uint32_t len, uint8_t fill, bool later)
{
	int rc = 1;
	uint8_t *p = esock_shmq_reserve(q, len, &rc);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(rc, 0);
	memset(p, fill, len);
	if (later)
		esock_shmq_commit_later(q, len);
	else
		esock_shmq_commit(q, len);
}

static void put(struct esock_shmq *q, uint32_t len, uint8_t fill)
{
	put_ex(q, len, fill, false);
}

static void take(struct esock_shmq *q, uint32_t want, uint8_t fill)
{
	uint32_t len = 0;
	int rc = 1;
	const uint8_t *p = esock_shmq_peek(q, &len, &rc);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(len, want);
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != fill)
			ck_abort_msg("octet %u of a %u-octet record: %u, not %u", i, len, p[i], fill);
	esock_shmq_release(q);
}

START_TEST(in_order_across_the_end)
{
	size_t sz = esock_shmq_size(CAP);
	void *m = shared_mem(sz);
	struct esock_shmq *p = esock_shmq_init(m, CAP), *c = esock_shmq_attach(m, sz);
	uint32_t len;
	int rc;
	unsigned seed = 1;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EAGAIN);
	/* Sizes that do not divide the queue: records meet its end at every offset. */
	for (int round = 0; round < 20000; round++) {
		uint32_t n = (uint32_t)rand_r(&seed) % 700;

		put(p, n, (uint8_t)round);
		if (round % 3 == 0)
			put(p, 0, 0xee);
		take(c, n, (uint8_t)round);
		if (round % 3 == 0)
			take(c, 0, 0xee);
	}
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	esock_shmq_detach(p);
	esock_shmq_detach(c);
	munmap(m, sz);
}
END_TEST

START_TEST(full_and_too_big)
{
	size_t sz = esock_shmq_size(CAP);
	void *m = shared_mem(sz);
	struct esock_shmq *p = esock_shmq_init(m, CAP), *c = esock_shmq_attach(m, sz);
	uint32_t max = esock_shmq_max_record(p);
	int rc, n = 0;

	ck_assert_ptr_null(esock_shmq_reserve(p, max + 1, &rc));
	ck_assert_int_eq(rc, -EMSGSIZE);
	while (esock_shmq_reserve(p, 100, &rc)) {
		esock_shmq_commit(p, 100);
		n++;
	}
	ck_assert_int_eq(rc, -EAGAIN);
	ck_assert_int_eq(n, (int)(CAP / 104)); /* 4 + 100, 8-aligned */
	take(c, 100, 0);
	ck_assert_ptr_nonnull(esock_shmq_reserve(p, 96, &rc)); /* room again */
	/* The largest record fits once the queue is empty, wherever it stands. */
	esock_shmq_commit(p, 96);
	for (int i = 0; i < n; i++) {
		uint32_t len;

		ck_assert_ptr_nonnull(esock_shmq_peek(c, &len, &rc));
		esock_shmq_release(c);
	}
	put(p, max, 7);
	take(c, max, 7);
	esock_shmq_detach(p);
	esock_shmq_detach(c);
	munmap(m, sz);
}
END_TEST

START_TEST(sizes_and_attach)
{
	uint8_t *m = shared_mem(esock_shmq_size(CAP) + 64);

	ck_assert_uint_eq(esock_shmq_size(CAP), CAP + 256);
	ck_assert_uint_eq(esock_shmq_size(CAP + 8), 0); /* not a power of two */
	ck_assert_uint_eq(esock_shmq_size(1024), 0);   /* too small */
	ck_assert_ptr_null(esock_shmq_init(m + 8, CAP)); /* misaligned */
	ck_assert_ptr_null(esock_shmq_attach(m, esock_shmq_size(CAP))); /* nothing laid there */
	esock_shmq_detach(esock_shmq_init(m, CAP));
	ck_assert_ptr_null(esock_shmq_attach(m, esock_shmq_size(CAP) - 1)); /* mapped too short */
	m[8] = 0xff; /* cap made wild */
	ck_assert_ptr_null(esock_shmq_attach(m, esock_shmq_size(CAP)));
	munmap(m, esock_shmq_size(CAP) + 64);
}
END_TEST

/* The shared indices sit at octets 64 (head) and 128 (tail); a record's length before it. */
START_TEST(broken_by_the_other_side)
{
	size_t sz = esock_shmq_size(CAP);
	uint8_t *m = shared_mem(sz);
	struct esock_shmq *p = esock_shmq_init(m, CAP), *c = esock_shmq_attach(m, sz);
	uint64_t wild = 1ull << 40, fine;
	uint32_t len, huge = CAP;
	int rc;

	put(p, 10, 1);
	memcpy(&fine, m + 64, 8);
	memcpy(m + 64, &wild, 8); /* a head far beyond the tail */
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EBADMSG);
	memcpy(m + 64, &fine, 8);
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc)); /* dead stays dead */
	ck_assert_int_eq(rc, -EBADMSG);
	esock_shmq_detach(c);

	c = esock_shmq_attach(m, sz);
	memcpy(m + 256, &huge, 4); /* a length longer than what was published */
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EBADMSG);
	esock_shmq_detach(c);

	memcpy(m + 128, &wild, 8); /* the consumer's index wild: the producer refuses to go on */
	ck_assert_ptr_null(esock_shmq_reserve(p, 10, &rc));
	ck_assert_int_eq(rc, -EBADMSG);
	esock_shmq_detach(p);
	munmap(m, sz);
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The hints a side reads to choose between looking and sleeping: when the
 * producer last woke a sleeping consumer (only a commit that found it asleep
 * dates it), and the consumer's CPU (not told: -1; a wild word: -1).
 */
START_TEST(wake_hints)
{
	size_t sz = esock_shmq_size(CAP);
	uint8_t *m = shared_mem(sz);
	struct esock_shmq *p = esock_shmq_init(m, CAP), *c = esock_shmq_attach(m, sz);
	uint32_t wild = 0xffffffffu;
	uint64_t t0, t1;

	ck_assert_uint_eq(esock_shmq_rung_ns(c), 0);
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), -1);
	put(p, 10, 1); /* nobody asleep: no date */
	ck_assert_uint_eq(esock_shmq_rung_ns(c), 0);
	take(c, 10, 1);
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 0);
	t0 = mono_ns();
	put(p, 20, 2);
	t1 = mono_ns();
	esock_shmq_sleep_end(c);
	ck_assert_uint_ge(esock_shmq_rung_ns(c), t0);
	ck_assert_uint_le(esock_shmq_rung_ns(c), t1);
	take(c, 20, 2);

	esock_shmq_set_cpu(c, 3);
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), 3);
	esock_shmq_set_cpu(c, 0);
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), 0);
	esock_shmq_set_cpu(c, -1);
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), -1);
	memcpy(m + 208, &wild, 4); /* the word the consumer writes, gone wild */
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), -1);
	esock_shmq_detach(c);
	esock_shmq_detach(p);
	munmap(m, sz);
}
END_TEST

/* The bell's count since the last look (an eventfd read; 0 when it was not rung). */
static uint64_t rings(int efd)
{
	uint64_t v = 0;

	return read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? v : 0;
}

/* A queue with an eventfd for a bell, both ends in this process. */
struct belled {
	size_t sz;
	uint8_t *m;
	struct esock_shmq *p, *c;
	int efd;
};

static void belled_open(struct belled *b)
{
	b->sz = esock_shmq_size(CAP);
	b->m = shared_mem(b->sz);
	b->p = esock_shmq_init(b->m, CAP);
	b->c = esock_shmq_attach(b->m, b->sz);
	b->efd = eventfd(0, EFD_NONBLOCK);
	ck_assert_int_ge(b->efd, 0);
	esock_shmq_set_bell(b->p, b->efd);
}

static void belled_close(struct belled *b)
{
	close(b->efd);
	esock_shmq_detach(b->c);
	esock_shmq_detach(b->p);
	munmap(b->m, b->sz);
}

/*
 * Commits while the consumer sleeps ring the bell once (each more would be
 * a system call for nothing); commits while it is awake never.
 */
START_TEST(bell_once_per_sleep)
{
	struct belled b;

	belled_open(&b);
	put(b.p, 8, 0); /* awake: no ring */
	ck_assert_uint_eq(rings(b.efd), 0);
	take(b.c, 8, 0);
	ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
	for (int i = 1; i <= 10; i++)
		put(b.p, 8, (uint8_t)i);
	ck_assert_uint_eq(rings(b.efd), 1);
	esock_shmq_sleep_end(b.c);
	for (int i = 1; i <= 10; i++)
		take(b.c, 8, (uint8_t)i);
	belled_close(&b);
}
END_TEST

/* A sleep after a wake-up is rung again (the ring was for the earlier sleep). */
START_TEST(bell_each_new_sleep)
{
	struct belled b;

	belled_open(&b);
	for (uint8_t round = 0; round < 3; round++) {
		ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
		put(b.p, 8, round);
		put(b.p, 8, round + 10);
		ck_assert_uint_eq(rings(b.efd), 1);
		esock_shmq_sleep_end(b.c);
		take(b.c, 8, round);
		take(b.c, 8, round + 10);
	}
	belled_close(&b);
}
END_TEST

/*
 * Two threads asleep on one bell, one ring; the one left sleeping when the
 * other woke is rung by the next commit (a lost wake-up otherwise).
 */
START_TEST(bell_two_sleepers)
{
	struct belled b;

	belled_open(&b);
	ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
	ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
	put(b.p, 8, 13);
	ck_assert_uint_eq(rings(b.efd), 1);
	esock_shmq_sleep_end(b.c);
	take(b.c, 8, 13);
	put(b.p, 8, 14);
	ck_assert_uint_eq(rings(b.efd), 1);
	esock_shmq_sleep_end(b.c);
	take(b.c, 8, 14);
	belled_close(&b);
}
END_TEST

/*
 * Records whose ring is owed: a sleeping consumer is rung once when the
 * producer says so, whatever their number;
 * nothing owed, nothing rung; a commit that rings pays what was owed.
 */
START_TEST(bell_owed_then_rung)
{
	struct belled b;

	belled_open(&b);
	ck_assert(!esock_shmq_ring(b.p)); /* (nothing owed) */
	ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
	for (int i = 1; i <= 5; i++)
		put_ex(b.p, 8, (uint8_t)i, true);
	ck_assert_uint_eq(rings(b.efd), 0);
	ck_assert(esock_shmq_ring(b.p));
	ck_assert_uint_eq(rings(b.efd), 1);
	ck_assert(!esock_shmq_ring(b.p));
	ck_assert_uint_eq(rings(b.efd), 0);
	esock_shmq_sleep_end(b.c);
	for (int i = 1; i <= 5; i++)
		take(b.c, 8, (uint8_t)i);
	/* Owed, then a commit that rings: one ring, and nothing left owed. */
	ck_assert_int_eq(esock_shmq_sleep_begin(b.c), 0);
	put_ex(b.p, 8, 21, true);
	put(b.p, 8, 22);
	ck_assert_uint_eq(rings(b.efd), 1);
	ck_assert(!esock_shmq_ring(b.p));
	esock_shmq_sleep_end(b.c);
	take(b.c, 8, 21);
	take(b.c, 8, 22);
	/* Owed while the consumer is awake: the ring then wakes no one. */
	put_ex(b.p, 8, 23, true);
	ck_assert(esock_shmq_ring(b.p));
	ck_assert_uint_eq(rings(b.efd), 0);
	take(b.c, 8, 23);
	belled_close(&b);
}
END_TEST

#define STREAM 30000

/* Another process produces records numbered 0..STREAM-1; this one checks them, sleeping when empty. */
START_TEST(two_processes)
{
	size_t sz = esock_shmq_size(16 * 1024);
	void *m = shared_mem(sz);
	struct esock_shmq *c = esock_shmq_init(m, 16 * 1024);
	pid_t pid = fork();
	uint32_t next = 0, sleeps = 0;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct esock_shmq *p = esock_shmq_attach(m, sz);

		esock_shmq_detach(c); /* (the consumer's handle is the parent's) */

		for (uint32_t i = 0; p && i < STREAM;) {
			uint32_t n = 4 + i % 61;
			uint8_t *r = esock_shmq_reserve(p, n, NULL);

			if (!r) {
				usleep(50); /* full: the consumer has some catching up to do */
				continue;
			}
			memcpy(r, &i, 4);
			memset(r + 4, (int)(i & 0xff), n - 4);
			esock_shmq_commit(p, n);
			if (i++ % 1000 == 0)
				usleep(2000); /* (now and then the consumer goes to sleep) */
		}
		esock_shmq_detach(p); /* (a leak checker follows the child too) */
		_exit(p ? 0 : 1);
	}
	while (next < STREAM) {
		uint32_t len, k;
		int rc;
		const uint8_t *r = esock_shmq_peek(c, &len, &rc);

		if (!r) {
			ck_assert_int_eq(rc, -EAGAIN);
			ck_assert_int_ne(esock_shmq_wait(c, 5000), -ETIMEDOUT);
			sleeps++;
			continue;
		}
		ck_assert_uint_eq(len, 4 + next % 61);
		memcpy(&k, r, 4);
		ck_assert_uint_eq(k, next);
		for (uint32_t i = 4; i < len; i++)
			if (r[i] != (next & 0xff))
				ck_abort_msg("record %u, octet %u: %u", next, i, r[i]);
		esock_shmq_release(c);
		next++;
	}
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_uint_gt(sleeps, 0); /* (the producer paused: the consumer slept and was woken) */
	ck_assert_int_eq(esock_shmq_wait(c, 10), -ETIMEDOUT);
	esock_shmq_detach(c);
	munmap(m, sz);
}
END_TEST


/*
 * Remote copies (the iWARP transport's queues): each side has its own
 * memory, the words one side writes for the other travel by |push| (an
 * RDMA Write there, a copy here), |pull| fetches the other copy's words (an
 * RDMA Read), |ring| wakes.  A "link" joins a producer's copy to a
 * consumer's; |broken| makes every push fail.
 */
struct link {
	uint8_t *mine, *theirs;
	size_t len;
	int rings, pushes;
	bool broken, hold; /* hold: pushes are kept back (in flight) until flushed */
	uint32_t held_off[64], held_len[64];
	int nheld;
};

static int link_push(void *arg, uint32_t off, uint32_t len)
{
	struct link *l = arg;

	ck_assert_uint_le((size_t)off + len, l->len); /* never outside the queue's memory */
	if (l->broken)
		return -EIO;
	l->pushes++;
	if (l->hold) {
		ck_assert_int_lt(l->nheld, 64);
		l->held_off[l->nheld] = off;
		l->held_len[l->nheld++] = len;
		return 0;
	}
	memcpy(l->theirs + off, l->mine + off, len);
	return 0;
}

static void link_flush(struct link *l)
{
	for (int i = 0; i < l->nheld; i++)
		memcpy(l->theirs + l->held_off[i], l->mine + l->held_off[i], l->held_len[i]);
	l->nheld = 0;
	l->hold = false;
}

static int link_pull(void *arg, uint32_t off, uint32_t len, void *into)
{
	struct link *l = arg;

	ck_assert_uint_le((size_t)off + len, l->len);
	if (l->broken)
		return -EIO;
	memcpy(into, l->theirs + off, len);
	return 0;
}

static void link_ring(void *arg)
{
	((struct link *)arg)->rings++;
}

/* A producer on |a| and a consumer on |b| (two memories), joined by |pl| and |cl|. */
static void remote_pair(struct link *pl, struct link *cl, struct esock_shmq **p, struct esock_shmq **c,
			bool consumer_pushes)
{
	size_t sz = esock_shmq_size(CAP);
	uint8_t *a = aligned_alloc(64, sz), *b = aligned_alloc(64, sz);
	struct esock_shmq_remote pr = { link_push, link_pull, link_ring, pl, NULL };
	struct esock_shmq_remote cr = { link_push, link_pull, link_ring, cl, NULL };

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	*pl = (struct link){ .mine = a, .theirs = b, .len = sz };
	*cl = (struct link){ .mine = b, .theirs = a, .len = sz };
	*p = esock_shmq_init(a, CAP);
	*c = esock_shmq_init(b, CAP);
	ck_assert_ptr_nonnull(*p);
	ck_assert_ptr_nonnull(*c);
	esock_shmq_set_remote(*p, &pr);
	if (consumer_pushes)
		esock_shmq_set_remote(*c, &cr);
}

static void remote_end(struct link *pl, struct esock_shmq *p, struct esock_shmq *c)
{
	uint8_t *a = pl->mine, *b = pl->theirs;

	esock_shmq_detach(p);
	esock_shmq_detach(c);
	free(a);
	free(b);
}

/* Records cross whole and in order, across the end, through pushes only; a full queue frees by the consumer's. */
START_TEST(remote_copies_in_order)
{
	struct link pl, cl;
	struct esock_shmq *p, *c;
	unsigned seed = 7;
	uint32_t len;
	int rc, n = 0;

	remote_pair(&pl, &cl, &p, &c, true);
	for (int round = 0; round < 20000; round++) {
		uint32_t k = (uint32_t)rand_r(&seed) % 700;

		put(p, k, (uint8_t)round);
		take(c, k, (uint8_t)round);
	}
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EAGAIN);
	/* Full, then room again once the consumer's position came back. */
	for (uint8_t *r; (r = esock_shmq_reserve(p, 100, &rc)); n++) {
		memset(r, 0, 100);
		esock_shmq_commit(p, 100);
	}
	ck_assert_int_eq(rc, -EAGAIN);
	take(c, 100, 0);
	ck_assert_ptr_nonnull(esock_shmq_reserve(p, 100, &rc));
	esock_shmq_commit(p, 100);
	ck_assert_int_gt(n, 10);
	ck_assert_int_eq(esock_shmq_wait(c, 0), -EOPNOTSUPP);
	remote_end(&pl, p, c);
}
END_TEST

/* The control: a consumer whose position never reaches the producer leaves it full for good. */
START_TEST(remote_copies_need_the_consumers_pushes)
{
	struct link pl, cl;
	struct esock_shmq *p, *c;
	int rc, n = 0;

	remote_pair(&pl, &cl, &p, &c, false);
	for (uint8_t *r; (r = esock_shmq_reserve(p, 100, &rc)); n++) {
		memset(r, 0, 100);
		esock_shmq_commit(p, 100);
	}
	for (int i = 0; i < n; i++)
		take(c, 100, 0);
	ck_assert_ptr_null(esock_shmq_reserve(p, 100, &rc));
	ck_assert_int_eq(rc, -EAGAIN);
	remote_end(&pl, p, c);
}
END_TEST

/*
 * Sleeping across the link: the consumer's count reaches the producer,
 * whose next commit rings once; a consumer whose count is still in flight
 * (the producer's commit raced it) finds the record by its pull and does
 * not sleep; a broken link kills the queue.
 */
START_TEST(remote_copies_sleep_and_ring)
{
	struct link pl, cl;
	struct esock_shmq *p, *c;
	uint32_t len;
	int rc;

	remote_pair(&pl, &cl, &p, &c, true);
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 0); /* empty: it may sleep */
	put(p, 10, 1);
	ck_assert_int_eq(pl.rings, 1);
	ck_assert_uint_ne(esock_shmq_rung_ns(c), 0);
	esock_shmq_sleep_end(c);
	take(c, 10, 1);
	put(p, 10, 2);
	ck_assert_int_eq(pl.rings, 1); /* awake: no ring */
	take(c, 10, 2);
	/*
	 * The race: the consumer's count and the producer's record cross in
	 * flight.  The commit does not see the count (no ring), the consumer
	 * does not see the record's push yet: its pull of the producer's end
	 * finds it, so it does not sleep (without the pull it would, for good).
	 */
	cl.hold = pl.hold = true;
	put(p, 20, 3);
	ck_assert_int_eq(pl.rings, 1);
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 1);
	/*
	 * The pull (a Read's answer) passed the record's Writes: the end it
	 * saw says "do not sleep" and nothing more; the consumer reads no
	 * record until the record itself is there.
	 */
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EAGAIN);
	link_flush(&cl);
	link_flush(&pl);
	esock_shmq_sleep_end(c);
	take(c, 20, 3);
	/* The consumer tells its CPU across. */
	esock_shmq_set_cpu(c, 3);
	ck_assert_int_eq(esock_shmq_consumer_cpu(p), 3);
	/* A broken link: the queue is cut on that side. */
	put(p, 7, 5); /* (placed before the link broke) */
	pl.broken = true;
	put(p, 5, 4); /* (the commit's pushes fail) */
	ck_assert_ptr_null(esock_shmq_reserve(p, 5, &rc));
	ck_assert_int_eq(rc, -EPIPE);
	/* The consumer's side learns it by a push or pull of its own: what came is read, then the end. */
	cl.broken = true;
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 1); /* (no sleep on a broken link) */
	esock_shmq_sleep_end(c);
	take(c, 7, 5);
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EPIPE);
	remote_end(&pl, p, c);
}
END_TEST

/*
 * One ring per sleep across the link: commits while the consumer sleeps ring
 * once (the rest would be Sends beyond its posted receives), and a consumer
 * that woke and slept again before the producer saw it awake is rung again
 * (a count the producer only ever sees at 1 must not silence it).
 */
START_TEST(remote_copies_one_ring_per_sleep)
{
	struct link pl, cl;
	struct esock_shmq *p, *c;

	remote_pair(&pl, &cl, &p, &c, true);
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 0);
	for (int i = 0; i < 10; i++)
		put(p, 16, (uint8_t)i);
	ck_assert_int_eq(pl.rings, 1);
	/* Awake and asleep again, its "awake" still in flight when the producer commits. */
	cl.hold = true;
	esock_shmq_sleep_end(c);
	cl.hold = false;
	cl.nheld = 0; /* (the count's 0 never arrives: the next sleep's 1 overtakes it) */
	for (int i = 0; i < 10; i++)
		take(c, 16, (uint8_t)i);
	ck_assert_int_eq(esock_shmq_sleep_begin(c), 0);
	put(p, 16, 10);
	ck_assert_int_eq(pl.rings, 2);
	put(p, 16, 11);
	ck_assert_int_eq(pl.rings, 2);
	esock_shmq_sleep_end(c);
	remote_end(&pl, p, c);
}
END_TEST

/* A producer's copy that lies (its end beyond the data): the consumer refuses it, reads nothing. */
START_TEST(remote_copies_hostile_producer)
{
	struct link pl, cl;
	struct esock_shmq *p, *c;
	uint64_t bad = 1u << 30;
	uint32_t len;
	int rc;

	remote_pair(&pl, &cl, &p, &c, true);
	put(p, 8, 9);
	memcpy(pl.theirs + 64, &bad, sizeof(bad)); /* (the head word, as a push would put it) */
	ck_assert_ptr_null(esock_shmq_peek(c, &len, &rc));
	ck_assert_int_eq(rc, -EBADMSG);
	remote_end(&pl, p, c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("shmq");
	TCase *tc = tcase_create("queue");

	tcase_add_test(tc, in_order_across_the_end);
	tcase_add_test(tc, full_and_too_big);
	tcase_add_test(tc, sizes_and_attach);
	tcase_add_test(tc, broken_by_the_other_side);
	tcase_add_test(tc, wake_hints);
	tcase_add_test(tc, bell_once_per_sleep);
	tcase_add_test(tc, bell_each_new_sleep);
	tcase_add_test(tc, bell_two_sleepers);
	tcase_add_test(tc, bell_owed_then_rung);
	tcase_add_test(tc, two_processes);
	tcase_add_test(tc, remote_copies_in_order);
	tcase_add_test(tc, remote_copies_need_the_consumers_pushes);
	tcase_add_test(tc, remote_copies_sleep_and_ring);
	tcase_add_test(tc, remote_copies_one_ring_per_sleep);
	tcase_add_test(tc, remote_copies_hostile_producer);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
