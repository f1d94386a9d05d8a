/* SPDX-License-Identifier: MIT */
/*
 * The iWARP wire core in one include: CRC32C, MPA, DDP, RDMAP and the
 * Terminate vocabulary.  Pure codecs over memory (no sockets, threads or
 * clocks), shared by the endpoint, libesock and ddpdump.
 */
#ifndef ESOCK_WIRE_H
#define ESOCK_WIRE_H

#include <esock/crc32c.h>
#include <esock/ddp.h>
#include <esock/export.h>
#include <esock/mpa.h>
#include <esock/rdmap.h>
#include <esock/term.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library version, e.g. "0.1.0". */
ESOCK_EXPORT const char *esock_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_WIRE_H */
