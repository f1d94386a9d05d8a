/* SPDX-License-Identifier: MIT */
/* MPA (RFC 5044, RFC 6581): start frames, FPDU transmit and receive. */
#ifndef ESOCK_MPA_H
#define ESOCK_MPA_H

#include <esock/export.h>
#include <esock/term.h>

#endif /* ESOCK_MPA_H */
