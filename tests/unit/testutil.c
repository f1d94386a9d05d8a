/* SPDX-License-Identifier: MIT */
/* Shared unit-test helpers (see testutil.h). */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/testutil.h"

int tu_hex(const char *text, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (const char *p = text; *p; p++) {
		int v;

		if (isspace((unsigned char)*p))
			continue;
		if (!isxdigit((unsigned char)*p))
			return -1;
		v = isdigit((unsigned char)*p) ? *p - '0' : (tolower((unsigned char)*p) - 'a' + 10);
		if (hi < 0) {
			hi = v;
		} else {
			if (n >= cap)
				return -1;
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return hi < 0 ? (int)n : -1;
}

static void dump(const char *tag, const uint8_t *p, size_t n)
{
	fprintf(stderr, "%s:", tag);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", (i % 16) ? " " : "\n  ", p[i]);
	fprintf(stderr, "\n");
}

void tu_assert_mem_at(const char *file, int line, const void *got, const void *want, size_t n)
{
	if (memcmp(got, want, n) != 0) {
		fprintf(stderr, "%s:%d: memory differs\n", file, line);
		dump("got", got, n);
		dump("want", want, n);
	}
	ck_assert_msg(memcmp(got, want, n) == 0, "%s:%d: memory differs (%zu octets)", file, line, n);
}

uint64_t tu_rng_seed(const char *test_name)
{
	const char *env = getenv("ESOCK_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();

	if (seed == 0)
		seed = 0x9e3779b97f4a7c15ull;
	fprintf(stderr, "%s: seed %llu (replay with ESOCK_TEST_SEED=%llu)\n", test_name,
		(unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

uint64_t tu_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t tu_rng_below(uint64_t *s, uint64_t n)
{
	return tu_rng_next(s) % n;
}

void tu_rng_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(tu_rng_next(s) >> 32);
}

int tu_feed_chunks(const uint8_t *buf, size_t len, size_t chunk, tu_feed_fn feed, void *ctx)
{
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		if (feed(ctx, buf + off, n) < 0)
			return -1;
	}
	return 0;
}

int tu_feed_cut(const uint8_t *buf, size_t len, size_t cut, tu_feed_fn feed, void *ctx)
{
	if (cut > 0 && feed(ctx, buf, cut) < 0)
		return -1;
	if (cut < len && feed(ctx, buf + cut, len - cut) < 0)
		return -1;
	return 0;
}

int tu_feed_random(const uint8_t *buf, size_t len, uint64_t *rng, tu_feed_fn feed, void *ctx)
{
	size_t off = 0;

	while (off < len) {
		size_t n = 1 + (size_t)tu_rng_below(rng, 97);

		if (n > len - off)
			n = len - off;
		if (feed(ctx, buf + off, n) < 0)
			return -1;
		off += n;
	}
	return 0;
}

static int run(Suite *s, bool forked)
{
	SRunner *sr = srunner_create(s);
	int failed;

	if (forked) {
		srunner_set_fork_status(sr, CK_FORK);
		signal(SIGPIPE, SIG_IGN);
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tu_run(Suite *s)
{
	return run(s, false);
}

int tu_run_forked(Suite *s)
{
	return run(s, true);
}

bool tu_under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}
