/* SPDX-License-Identifier: MIT */
/* RDMAP (RFC 5040, RFC 7306): control field, opcodes, headers, Terminate. */
#ifndef ESOCK_RDMAP_H
#define ESOCK_RDMAP_H

#include <esock/ddp.h>
#include <esock/export.h>
#include <esock/term.h>

#endif /* ESOCK_RDMAP_H */
