/* SPDX-License-Identifier: MIT */
/*
 * Runs tshark on a capture and returns its field output as rows of columns,
 * for oracle tests.  tshark's iWARP dissectors are an implementation
 * independent of ours: agreement field by field is evidence we are right.
 */
#ifndef ESOCK_TESTS_TSHARK_RUN_H
#define ESOCK_TESTS_TSHARK_RUN_H

#include <stddef.h>

#define TSHARK_MAX_COLS 32

struct tshark_row {
	char *col[TSHARK_MAX_COLS]; /* "" for an absent field */
	int ncol;
};

struct tshark_out {
	struct tshark_row *rows;
	size_t nrows;
	char *text; /* whole verbose text when run with fields == NULL */
};

/*
 * The tshark binary to use: $TSHARK, else "tshark" when it is on PATH, else
 * NULL (the caller skips with exit code 77 unless ESOCK_REQUIRE_TSHARK is
 * set, in which case that is a failure).
 */
const char *tshark_path(void);

/*
 * Runs tshark -r |pcap| with the iWARP-friendly options (heuristics first,
 * RPC-over-RDMA and SMB Direct payload heuristics off, no Send reassembly)
 * plus |extra| (may be NULL).  With |fields| (NULL-terminated list) prints
 * those fields one row per frame that has |filter| matching; without, stores
 * the verbose (-V) text.  Returns 0 or -1.
 */
int tshark_run(const char *pcap, const char *filter, const char *const *fields,
	       struct tshark_out *out);
void tshark_out_free(struct tshark_out *out);

#endif
