/* SPDX-License-Identifier: MIT */
/*
 * One-line text rendering of decoded start frames and DDP/RDMAP segments,
 * shared by the demo and (later) ddpdump so that both print the same way.
 */
#ifndef ESOCK_TOOLS_FPDU_PRINT_H
#define ESOCK_TOOLS_FPDU_PRINT_H

#include <stdio.h>

#include <esock/wire.h>

/* "MPA Request rev 2 M=0 C=1 R=0 S=1 | IRD 8 ORD 8 A=0 RTR - | PD 12 octets" */
void fpdu_print_frame(FILE *f, const struct esock_mpa_frame *fr);

/* "DDP T=1 L=0 STag 0x... TO 0x... | RDMA Write | payload 1428" and, for a
 * Terminate, its reason in words. */
void fpdu_print_msg(FILE *f, const struct esock_rdmap_msg *m);

/* Verbose lines for a Terminate's copied headers (DDP and Read Request). */
void fpdu_print_term_copies(FILE *f, const struct esock_rdmap_term *t);

#endif
