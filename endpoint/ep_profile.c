/* SPDX-License-Identifier: MIT */
/*
 * The peer profile table.  Each entry states what we ask for and what we
 * put up with when talking to one kind of peer; the reasons are in
 * docs/peer-profiles.md.  "generic" sends conservatively: MPA revision 2,
 * CRC requested, markers never requested (always accepted), no RTR.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <esock/mpa.h>
#include <esock/rdmap.h>

#include "endpoint/ep_profile.h"

#define RTR_ALL (ESOCK_MPA_RTR_SEND | ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ)

static const struct ep_profile profiles[] = {
	{ .name = "generic", .mpa_rev = 2, .crc = true, .p2p = false,
	  .rtr_offer = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .rtr_accept = RTR_ALL,
	  .pd_max = ESOCK_MPA_PD_MAX, .term_order = ESOCK_RDMAP_TERM_RFC },
	/*
	 * Linux siw 6.1: at most 256 octets of private data; gives up on a
	 * downgraded Reply; after its Reply it may not yet read the socket (the
	 * accept race), so the first FPDU waits a little.
	 */
	{ .name = "siw", .mpa_rev = 2, .crc = true, .p2p = false,
	  .rtr_offer = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .rtr_accept = RTR_ALL,
	  .pd_max = ESOCK_MPA_PD_MAX_SIW, .first_fpdu_delay_ms = 200, .siw_compat = true,
	  .term_order = ESOCK_RDMAP_TERM_RFC },
	/* Chelsio iw_cxgb4: peer-to-peer by default (peer2peer=1) with a Read RTR only (p2p_type). */
	{ .name = "cxgb4", .mpa_rev = 2, .crc = true, .p2p = true,
	  .rtr_offer = ESOCK_MPA_RTR_READ, .rtr_accept = ESOCK_MPA_RTR_READ | ESOCK_MPA_RTR_WRITE,
	  .pd_max = ESOCK_MPA_PD_MAX_SIW, .term_order = ESOCK_RDMAP_TERM_RFC },
	/* Intel irdma: always peer-to-peer (it fails a revision 2 frame without A), offers and prefers Read. */
	{ .name = "irdma", .mpa_rev = 2, .crc = true, .p2p = true,
	  .rtr_offer = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .rtr_accept = RTR_ALL,
	  .pd_max = ESOCK_MPA_PD_MAX_SIW, .term_order = ESOCK_RDMAP_TERM_RFC },
	/* Revision 1 peers (no RFC 6581 word). */
	{ .name = "mpa1", .mpa_rev = 1, .crc = true, .p2p = false,
	  .rtr_offer = 0, .rtr_accept = 0,
	  .pd_max = ESOCK_MPA_PD_MAX, .term_order = ESOCK_RDMAP_TERM_RFC },
};

const struct ep_profile *ep_profile_at(unsigned i)
{
	return i < sizeof(profiles) / sizeof(profiles[0]) ? &profiles[i] : NULL;
}

const struct ep_profile *ep_profile_find(const char *name)
{
	for (unsigned i = 0; ep_profile_at(i); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

const struct ep_profile *ep_profile_pick(const char *name)
{
	if (!name || !*name)
		name = getenv("ESOCK_PEER");
	if (!name || !*name)
		name = "generic";
	return ep_profile_find(name);
}
