/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the Check unit tests: hex parsing and comparison, a seeded
 * RNG that prints its seed (replay with ESOCK_TEST_SEED), and a driver that
 * feeds a buffer to an incremental parser in every possible split.
 */
#ifndef ESOCK_TESTS_TESTUTIL_H
#define ESOCK_TESTS_TESTUTIL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Parses hex text ("00 1f 41", whitespace ignored) into |out|; returns the
 * number of octets, or -1 on bad text or overflow of |cap|. */
int tu_hex(const char *text, uint8_t *out, size_t cap);

/* ck_assert that |got| equals |want| (|n| octets); prints both in hex first. */
#define tu_assert_mem(got, want, n) tu_assert_mem_at(__FILE__, __LINE__, (got), (want), (n))
void tu_assert_mem_at(const char *file, int line, const void *got, const void *want, size_t n);

/* Seeded xorshift RNG.  tu_rng_seed() takes ESOCK_TEST_SEED if set, else a
 * time-based seed, and prints it so a failure can be replayed. */
uint64_t tu_rng_seed(const char *test_name);
uint64_t tu_rng_next(uint64_t *state);
/* Uniform in [0, n) (n > 0). */
uint64_t tu_rng_below(uint64_t *state, uint64_t n);
void tu_rng_fill(uint64_t *state, void *buf, size_t len);

/*
 * A chunked feeder for incremental parsers: a "split pattern" cuts |len|
 * octets into pieces.  tu_split_one_cut(len, cut) gives the two-piece split
 * at |cut|; the callback |feed| is called per piece and returns 0 or -1.
 */
typedef int (*tu_feed_fn)(void *ctx, const uint8_t *piece, size_t n);
/* Feeds in pieces of |chunk| octets (1 = one byte at a time). */
int tu_feed_chunks(const uint8_t *buf, size_t len, size_t chunk, tu_feed_fn feed, void *ctx);
/* Feeds [0,cut) then [cut,len). */
int tu_feed_cut(const uint8_t *buf, size_t len, size_t cut, tu_feed_fn feed, void *ctx);
/* Feeds in pseudo-random pieces from |rng|. */
int tu_feed_random(const uint8_t *buf, size_t len, uint64_t *rng, tu_feed_fn feed, void *ctx);

/* Runs |s| (Check, normal output); returns the process exit status. */
struct Suite;
int tu_run(struct Suite *s);
/*
 * The same, each test in a process of its own whatever CK_FORK says, and
 * SIGPIPE ignored: for tests that change their process for good (a seccomp
 * filter, an exec).
 */
int tu_run_forked(struct Suite *s);

/* The test runs under valgrind (its preload is in LD_PRELOAD): timing checks step aside. */
bool tu_under_valgrind(void);

#endif
