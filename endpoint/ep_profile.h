/* SPDX-License-Identifier: MIT */
/*
 * Peer profiles: the known quirks of iWARP peers (Linux siw, Chelsio
 * iw_cxgb4, Intel irdma, ...) gathered in one named table instead of
 * scattered knobs.  Chosen by esock_conn_param.peer or $ESOCK_PEER;
 * docs/peer-profiles.md gives the facts behind each entry.
 */
#ifndef ESOCK_ENDPOINT_EP_PROFILE_H
#define ESOCK_ENDPOINT_EP_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

struct ep_profile {
	const char *name;
	uint8_t mpa_rev;         /* revision we ask for */
	bool crc;                /* ask for CRC */
	bool p2p;                /* initiator: ask for an RTR; responder: allow one */
	uint8_t rtr_offer;       /* RTR types offered as initiator (enum esock_mpa_rtr) */
	uint8_t rtr_accept;      /* RTR types accepted as responder */
	uint16_t pd_max;         /* largest private data the peer takes */
	uint16_t max_ulpdu;      /* cap on the ULPDUs we send (0: from the MSS only) */
	int first_fpdu_delay_ms; /* initiator: pause after the Reply before the first FPDU */
	bool siw_compat;         /* MPA negotiation quirks (esock_mpa_policy.siw_compat) */
	uint8_t term_order;      /* Terminate bit order we send (enum esock_rdmap_term_order) */
};

/* The profile named |name|, or NULL when there is none. */
const struct ep_profile *ep_profile_find(const char *name);

/* |name| if given, else $ESOCK_PEER, else "generic"; NULL for an unknown name. */
const struct ep_profile *ep_profile_pick(const char *name);

/* Every profile in turn (NULL after the last), for tools and tests. */
const struct ep_profile *ep_profile_at(unsigned i);

#endif /* ESOCK_ENDPOINT_EP_PROFILE_H */
