/* SPDX-License-Identifier: MIT */
/*
 * mkcapture: writes a synthetic capture for benchmarks: one MPA connection
 * (CRC on) carrying |MB| megabytes of 4 KiB RDMA Writes and Sends, framed by
 * the project's encoders, one FPDU per TCP segment (MSS 9000).
 *
 *   mkcapture FILE [MB]
 *
 * The stream builder is shared with the tests and asserts with Check, so the
 * work runs as a one-test Check suite.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/oracle/pcap_synth.h"
#include "tests/oracle/streams.h"

static const char *path;
static double mb = 100;
static int result = 1;

START_TEST(write_capture)
{
	static uint8_t data[4096];
	struct synth *cap = synth_open(path);
	struct conn c;
	struct esock_rdmap_msg m;
	uint64_t sent = 0;

	ck_assert_ptr_nonnull(cap);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13);
	streams_open_conn(cap, &c, 1, true, false);
	c.mulpdu = esock_mpa_mulpdu(9000, false);
	for (uint32_t i = 0; sent < (uint64_t)(mb * 1e6); i++) {
		esock_rdmap_msg_init(&m, (i & 1) ? ESOCK_RDMAP_SEND : ESOCK_RDMAP_WRITE);
		m.ddp.stag = 0x100;
		m.ddp.to = (uint64_t)i * 4096;
		streams_send_msg(&c, SYNTH_C2S, &m, data, sizeof(data), 9000);
		sent += sizeof(data);
		nex = 0; /* the expectation list is not needed here */
	}
	synth_conn_close(&c.sc);
	result = synth_close(cap) == 0 ? 0 : 1;
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("mkcapture");
	TCase *tc = tcase_create("write");
	SRunner *sr;

	if (argc < 2) {
		fprintf(stderr, "usage: mkcapture FILE [MB]\n");
		return 2;
	}
	path = argv[1];
	if (argc > 2)
		mb = atof(argv[2]);
	tcase_add_test(tc, write_capture);
	tcase_set_timeout(tc, 0);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_SILENT);
	if (srunner_ntests_failed(sr))
		result = 1;
	srunner_free(sr);
	return result;
}
