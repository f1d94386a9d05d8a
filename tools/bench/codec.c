/* SPDX-License-Identifier: MIT */
/*
 * esock-bench --codec: FPDU build+CRC and parse+CRC throughput of the MPA
 * codec for ULPDUs from 64 octets to 64 KiB, markers off and on, each next to
 * memcpy of the same octets measured in the same run (the machine is shared
 * and noisy: ratios are what counts).  Throughput counts ULPDU octets.
 * build is compared with memcpy of one ULPDU (the same cache-hot octets it
 * reads); parse with memcpy of the whole 4 MiB framed stream it walks.
 *
 *   build      esock_mpa_tx_build + advance: the zero-copy plan, CRC over
 *              the payload (what the engine does before writev)
 *   parse/buf  esock_mpa_rx_feed, buffered mode: CRC + copy into the ULPDU
 *              buffer
 *   parse/hdr  esock_mpa_rx_feed, header-first mode: CRC, payload left in
 *              place (the zero-copy receive path)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <esock/wire.h>

#include "tools/bench/bench.h"

static double cell_seconds = 0.25;
static volatile uint8_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs |fn| repeatedly for about cell_seconds; returns octets per second. */
static double rate(size_t (*fn)(void *), void *ctx)
{
	double t0 = now(), t;
	uint64_t bytes = 0;

	do {
		for (int i = 0; i < 16; i++)
			bytes += fn(ctx);
		t = now() - t0;
	} while (t < cell_seconds);
	return (double)bytes / t;
}

struct job {
	size_t len;
	bool markers;
	uint8_t *payload, *dst, *wire, *dst_stream;
	size_t wire_len;
	int nfpdu;
	struct esock_mpa_tx tx;
	struct esock_mpa_rx rx;
	uint8_t *ulpdu_buf;
};

static size_t do_memcpy(void *c)
{
	struct job *j = c;

	memcpy(j->dst, j->payload, j->len);
	sink ^= j->dst[j->len / 2];
	return j->len;
}

/* memcpy of the whole framed stream: the baseline for the parse columns. */
static size_t do_memcpy_stream(void *c)
{
	struct job *j = c;

	memcpy(j->dst_stream, j->wire, j->wire_len);
	sink ^= j->dst_stream[j->wire_len / 2];
	return j->len * (size_t)j->nfpdu;
}

static size_t do_build(void *c)
{
	struct job *j = c;
	struct iovec v = { j->payload, j->len };
	ssize_t n = esock_mpa_tx_build(&j->tx, &v, 1);

	if (n < 0)
		abort();
	esock_mpa_tx_advance(&j->tx, (size_t)n);
	return j->len;
}

static size_t do_parse(void *c)
{
	struct job *j = c;
	size_t off = 0;

	while (off < j->wire_len) {
		struct esock_mpa_ev ev;
		ssize_t n = esock_mpa_rx_feed(&j->rx, j->wire + off, j->wire_len - off, &ev);

		if (n < 0)
			abort();
		off += (size_t)n;
	}
	return j->len * (size_t)j->nfpdu;
}

/* Frames |nfpdu| copies of the ULPDU back to back; returns the stream length. */
static void make_stream(struct job *j)
{
	struct esock_mpa_tx tx;
	struct iovec v = { j->payload, j->len };

	j->wire_len = 0;
	esock_mpa_tx_init(&tx, true, j->markers, 0);
	for (int i = 0; i < j->nfpdu; i++) {
		ssize_t n = esock_mpa_tx_build(&tx, &v, 1);

		esock_mpa_tx_flatten(&tx, j->wire + j->wire_len, (size_t)n);
		esock_mpa_tx_advance(&tx, (size_t)n);
		j->wire_len += (size_t)n;
	}
}

static double parse_rate(struct job *j, bool buffered)
{
	struct esock_mpa_rx_cfg cfg = { .crc = true, .markers = j->markers,
					.buf = buffered ? j->ulpdu_buf : NULL,
					.buf_len = buffered ? 65536 : 0, .peek = buffered ? 0 : 48 };

	/* The stream always restarts at position 0, so one rx state per pass. */
	struct job copy = *j;
	double t0 = now(), t;
	uint64_t bytes = 0;

	do {
		esock_mpa_rx_init(&copy.rx, &cfg);
		bytes += do_parse(&copy);
		t = now() - t0;
	} while (t < cell_seconds);
	return (double)bytes / t;
}

void codec_run(bool csv, double seconds)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 16384, 65000 };
	struct job j;

	cell_seconds = seconds;
	printf("# esock %s codec benchmark, CRC32C via %s, GB/s of ULPDU octets, ratio = x/memcpy\n",
	       esock_version(), esock_crc32c_impl());
	j.payload = malloc(65536);
	j.dst = malloc(65536);
	j.ulpdu_buf = malloc(65536);
	j.wire = malloc(8u << 20);
	j.dst_stream = malloc(8u << 20);
	if (!j.payload || !j.dst || !j.ulpdu_buf || !j.wire || !j.dst_stream)
		abort();
	for (size_t i = 0; i < 65536; i++)
		j.payload[i] = (uint8_t)(i * 131 + 7);
	if (csv)
		printf("ulpdu,markers,memcpy_gbs,build_gbs,build_ratio,memcpy_stream_gbs,parse_buf_gbs,"
		       "parse_buf_ratio,parse_hdr_gbs,parse_hdr_ratio\n");
	else
		printf("%7s %7s %9s %9s %6s | %9s %10s %6s %10s %6s\n", "ULPDU", "markers", "memcpy",
		       "build", "ratio", "memcpy/s", "parse/buf", "ratio", "parse/hdr", "ratio");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int mk = 0; mk < 2; mk++) {
			double mc, ms, b, pb, ph;

			j.len = sizes[s];
			j.markers = mk;
			j.nfpdu = (int)((4u << 20) / (j.len + 64));
			esock_mpa_tx_init(&j.tx, true, j.markers, 0);
			make_stream(&j);
			mc = rate(do_memcpy, &j) / 1e9;
			b = rate(do_build, &j) / 1e9;
			ms = rate(do_memcpy_stream, &j) / 1e9;
			pb = parse_rate(&j, true) / 1e9;
			ph = parse_rate(&j, false) / 1e9;
			if (csv)
				printf("%zu,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f\n", j.len, mk, mc, b,
				       b / mc, ms, pb, pb / ms, ph, ph / ms);
			else
				printf("%7zu %7s %7.2f G %7.2f G %6.2f | %7.2f G %8.2f G %6.2f %8.2f G %6.2f\n",
				       j.len, mk ? "on" : "off", mc, b, b / mc, ms, pb, pb / ms, ph, ph / ms);
			fflush(stdout);
		}
	}
	free(j.payload);
	free(j.dst);
	free(j.ulpdu_buf);
	free(j.wire);
	free(j.dst_stream);
}

