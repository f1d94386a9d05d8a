/* SPDX-License-Identifier: MIT */
/*
 * Internal MPA wire helpers shared by mpa_tx.c and mpa_rx.c: marker
 * positions (RFC 5044 §4.3) and the marker layout.
 *
 * Marker rule used on both sides (matches Wireshark's dissector): markers sit
 * at stream positions k * 512 counted from the first octet of full operation.
 * A marker that falls right before an FPDU's ULPDU_Length belongs to that
 * FPDU, has FPDUPTR 0 and is covered by its CRC; any other marker inside an
 * FPDU has FPDUPTR = (marker position - ULPDU_Length position), i.e. it
 * points back to the header of the FPDU it sits in.
 */
#ifndef ESOCK_MPA_WIRE_H
#define ESOCK_MPA_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include <esock/mpa.h>

#include "util/byteorder.h"

/* Octets from |pos| to the next marker position (512 at a marker position). */
static inline uint32_t mpa_to_marker(uint32_t pos)
{
	return ESOCK_MPA_MARKER_INTERVAL - (pos & (ESOCK_MPA_MARKER_INTERVAL - 1));
}

static inline bool mpa_at_marker(uint32_t pos)
{
	return (pos & (ESOCK_MPA_MARKER_INTERVAL - 1)) == 0;
}

/* Marker: 16 reserved bits (0), then FPDUPTR big-endian. */
static inline void mpa_marker_put(uint8_t *m, uint16_t fpduptr)
{
	m[0] = 0;
	m[1] = 0;
	esock_put_be16(m + 2, fpduptr);
}

#endif
