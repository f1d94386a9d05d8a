/* SPDX-License-Identifier: MIT */
/*
 * ESOCK_EXPORT marks the symbols of the public API.  The library is built with
 * -fvisibility=hidden, so anything without it stays internal.
 */
#ifndef ESOCK_EXPORT_H
#define ESOCK_EXPORT_H

#if defined(__GNUC__) && defined(ESOCK_BUILDING)
#define ESOCK_EXPORT __attribute__((visibility("default")))
#else
#define ESOCK_EXPORT
#endif

#endif /* ESOCK_EXPORT_H */
