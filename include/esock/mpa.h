/* SPDX-License-Identifier: MIT */
/*
 * MPA (RFC 5044, updated by RFC 6581): start frames (Request/Reply, revision
 * 1 and 2, enhanced IRD/ORD and RTR negotiation) and FPDU framing (length,
 * markers, pad, CRC32C) for transmit and receive.  Pure code over memory.
 */
#ifndef ESOCK_MPA_H
#define ESOCK_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <esock/export.h>
#include <esock/term.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Start frames (mpa/mpa_startup.c) ==== */

/* ==== end of start frames ==== */

/* ==== FPDU framing (mpa/mpa_tx.c, mpa/mpa_rx.c) ==== */

/* ==== end of FPDU framing ==== */

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_MPA_H */
