/* SPDX-License-Identifier: MIT */
/* Library identity: the version string of libesock. */
#include "config.h"

#include <esock/wire.h>

ESOCK_EXPORT const char *esock_version(void)
{
	return PACKAGE_VERSION;
}
