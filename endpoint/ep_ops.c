/* SPDX-License-Identifier: MIT */
/* The operations' facts (see ep_ops.h). */
#include "config.h"

#include <esock/ddp.h>
#include <esock/rdmap.h>

#include "endpoint/ep_ops.h"

static const struct ep_wr_op wr_ops[] = {
	[ESOCK_WR_SEND] = { .rdmap = ESOCK_RDMAP_SEND, .wc = ESOCK_WC_SEND, .send = true },
	[ESOCK_WR_SEND_SE] = { .rdmap = ESOCK_RDMAP_SEND_SE, .wc = ESOCK_WC_SEND, .send = true },
	[ESOCK_WR_SEND_INV] = { .rdmap = ESOCK_RDMAP_SEND_INV, .wc = ESOCK_WC_SEND, .send = true },
	[ESOCK_WR_SEND_SE_INV] = { .rdmap = ESOCK_RDMAP_SEND_SE_INV, .wc = ESOCK_WC_SEND,
				   .send = true },
	[ESOCK_WR_RDMA_WRITE] = { .rdmap = ESOCK_RDMAP_WRITE, .wc = ESOCK_WC_RDMA_WRITE,
				  .tagged = true },
	/* One sink SGE: the Read Request names one STag and offset for the whole Response. */
	[ESOCK_WR_RDMA_READ] = { .rdmap = ESOCK_RDMAP_READ_REQ, .wc = ESOCK_WC_RDMA_READ,
				 .sge_access = ESOCK_ACCESS_LOCAL_WRITE, .sge_max = 1,
				 .read = true },
};

const struct ep_wr_op *ep_wr_op(unsigned opcode)
{
	return opcode < sizeof(wr_ops) / sizeof(wr_ops[0]) ? &wr_ops[opcode] : 0;
}

static const struct ep_rx_op rx_ops[16] = {
	[ESOCK_RDMAP_WRITE] = { .kind = EP_RXK_WRITE, .place_access = ESOCK_DDP_ACCESS_REMOTE_WRITE },
	[ESOCK_RDMAP_READ_REQ] = { .kind = EP_RXK_READ_REQ },
	[ESOCK_RDMAP_READ_RESP] = { .kind = EP_RXK_READ_RESP,
				    .place_access = ESOCK_DDP_ACCESS_LOCAL_WRITE },
	[ESOCK_RDMAP_SEND] = { .kind = EP_RXK_SEND },
	[ESOCK_RDMAP_SEND_INV] = { .kind = EP_RXK_SEND, .inval = true },
	[ESOCK_RDMAP_SEND_SE] = { .kind = EP_RXK_SEND, .wc_flags = ESOCK_WC_SOLICITED },
	[ESOCK_RDMAP_SEND_SE_INV] = { .kind = EP_RXK_SEND, .wc_flags = ESOCK_WC_SOLICITED,
				      .inval = true },
	[ESOCK_RDMAP_TERMINATE] = { .kind = EP_RXK_TERMINATE },
};

const struct ep_rx_op *ep_rx_op(uint8_t opcode)
{
	return &rx_ops[opcode & 0xf];
}
