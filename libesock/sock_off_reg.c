/* SPDX-License-Identifier: MIT */
/*
 * The offload mode's registered buffers (ESOCK_TSP_F_REG_BUFFERS, asked for
 * with ESOCK_TCPSERVER_OPT=reg): memory the program registers through the
 * extended API (esock_api.reg on an offloaded socket) is registered with
 * tcpserverd for the whole process, and from then on a send() or recv() of
 * any offloaded socket whose buffer lies in it crosses without a copy here:
 * tcpserverd reads the octets of a send from our memory (SEND_REG, answered
 * once read, so the buffer is the program's again when send returns) and
 * writes those of a recv into it (RECV_REG).  The seed's "synchronous calls
 * with registered buffers", through the plain socket calls.  Across the
 * network the memory is registered on the channel's protection domain and
 * tcpserverd moves the octets with RDMA Reads and Writes.  Registrations
 * are the process's: a forked child starts without (its tcpserverd host is
 * another), and its sends and recvs copy as before.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "esock/esock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_off_int.h"
#include "util/log.h"
#include "util/range.h"

static struct {
	uintptr_t addr;
	size_t len;       /* 0: free */
	uint32_t region;  /* tcpserverd's number */
	bool write;       /* tcpserverd may write it (receives) */
	struct esock_mr *mr; /* across the network: its registration on the channel's PD */
} regs[ESOCK_TSP_REGIONS_MAX];
static int nregs;         /* in use (a send or recv of a process with none looks no further) */

int sock_off_reg(void *addr, size_t len, unsigned access, uint32_t *stag)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_REG } }, resp;
	bool write = access & ESOCK_REG_LOCAL_WRITE;
	struct esock_mr *mr = NULL;
	uint32_t key;
	int rc, slot = -1;

	if (!len)
		return -EINVAL;
	pthread_mutex_lock(&off_proc.lock);
	if (!(off_proc.flags & ESOCK_TSP_F_REG_BUFFERS) || !off_proc.h) {
		rc = -EOPNOTSUPP; /* (not asked for) */
		goto out;
	}
	for (int i = 0; i < ESOCK_TSP_REGIONS_MAX && slot < 0; i++)
		if (!regs[i].len)
			slot = i;
	if (slot < 0) {
		rc = -ENOSPC;
		goto out;
	}
	if ((rc = tsp_host_mem_reg(off_proc.h, addr, len, &key, &mr)) < 0)
		goto out;
	req.u.reg.addr = (uintptr_t)addr;
	req.u.reg.len = len;
	req.u.reg.access = ESOCK_TSP_REG_READ | (write ? ESOCK_TSP_REG_WRITE : 0);
	req.u.reg.key = key;
	if ((rc = off_call(&req, &resp)) > 0) {
		regs[slot].addr = (uintptr_t)addr;
		regs[slot].len = len;
		regs[slot].region = (uint32_t)rc;
		regs[slot].write = write;
		regs[slot].mr = mr;
		nregs++;
		if (stag)
			*stag = (uint32_t)rc;
		rc = 0;
	} else {
		tsp_host_mem_dereg(off_proc.h, mr);
		if (rc == 0)
			rc = -EPROTO; /* (region 0 is none) */
	}
out:
	pthread_mutex_unlock(&off_proc.lock);
	if (rc < 0)
		log_debug("offload: registering %zu octets: %d", len, rc);
	return rc;
}

int sock_off_dereg(uint32_t stag)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_DEREG } }, resp;
	int rc = -ENOENT;

	pthread_mutex_lock(&off_proc.lock);
	for (int i = 0; i < ESOCK_TSP_REGIONS_MAX; i++)
		if (regs[i].len && regs[i].region == stag) {
			regs[i].len = 0; /* (ours no more, whatever tcpserverd says) */
			nregs--;
			req.u.dereg.region = stag;
			rc = off_call(&req, &resp);
			if (off_proc.h) /* (after tcpserverd's answer: it reads and writes no more) */
				tsp_host_mem_dereg(off_proc.h, regs[i].mr);
			regs[i].mr = NULL;
			break;
		}
	pthread_mutex_unlock(&off_proc.lock);
	return rc;
}

uint32_t off_reg_find(const void *buf, size_t len, bool write)
{
	uintptr_t a = (uintptr_t)buf;

	for (int i = 0; nregs && i < ESOCK_TSP_REGIONS_MAX; i++)
		if (regs[i].len && esock_range_within(regs[i].addr, regs[i].len, a, len) && (!write || regs[i].write))
			return regs[i].region;
	return 0;
}

void off_reg_forget(void)
{
	for (int i = 0; i < ESOCK_TSP_REGIONS_MAX; i++) { /* (the parent's MRs: left to it) */
		regs[i].len = 0;
		regs[i].mr = NULL;
	}
	nregs = 0;
}
