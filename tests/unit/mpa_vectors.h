/* SPDX-License-Identifier: MIT */
/*
 * Byte-exact FPDUs (ULPDU_Length .. CRC), CRC on, each decoded by tshark 4.0
 * as "Good CRC32" when they were first recorded.  Shared by the MPA, DDP and
 * RDMAP unit tests.
 */
#ifndef ESOCK_TESTS_MPA_VECTORS_H
#define ESOCK_TESTS_MPA_VECTORS_H

struct fpdu_vec {
	const char *name;
	const char *hex;
};

static const struct fpdu_vec fpdu_vecs[] = {
	{ "zero-length RDMA Write, STag 1, TO 0",
	  "00 0e c1 40 00 00 00 01 00 00 00 00 00 00 00 00 eb d3 4c 5f" },
	{ "zero-length Send, MSN 1",
	  "00 12 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 58 7b e8 c4" },
	{ "Send 'Hello, iWARP!' MSN 1 (3 PAD octets)",
	  "00 1f 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 48 65 6c 6c 6f 2c 20 69"
	  " 57 41 52 50 21 00 00 00 13 43 08 1e" },
	{ "zero-length Read Request, sink 0/0, size 0, source STag 1 TO 0",
	  "00 2e 41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00"
	  " 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 ba 10 e3 c9" },
	{ "zero-length Read Response, STag 0, TO 0",
	  "00 0e c1 42 00 00 00 00 00 00 00 00 00 00 00 00 69 75 d6 ca" },
	{ "Terminate LLP/MPA 0x02, no headers",
	  "00 16 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 20 02 00 00 7f e4 25 85" },
	{ "Terminate RDMAP/catastrophic/0xFF",
	  "00 16 41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 00 ff 00 00 51 89 6a 8c" },
};

#define FPDU_VECS (sizeof(fpdu_vecs) / sizeof(fpdu_vecs[0]))

#endif
