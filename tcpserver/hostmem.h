/* SPDX-License-Identifier: MIT */
/*
 * Registered buffers (ESOCK_TSP_F_REG_BUFFERS): the ranges of a host
 * process's memory that it registered with tcpserverd (REG), and, on one
 * machine, tcpserverd's reads and writes of them (process_vm_readv/writev
 * into the process whose pid the kernel vouched for: SO_PEERCRED of the
 * host's Unix socket, never HELLO's word; across the network they are RDMA
 * Reads and Writes with the region's key, rchan.h).  A transfer touches
 * nothing outside a region registered with its access.
 */
#ifndef ESOCK_TCPSERVER_HOSTMEM_H
#define ESOCK_TCPSERVER_HOSTMEM_H

#include <stdint.h>
#include <sys/types.h>

#include "tcpserver/proto/tsp.h"

struct tsp_regions {
	struct {
		uint64_t addr, len; /* len 0: free */
		uint32_t access;    /* ESOCK_TSP_REG_READ, ESOCK_TSP_REG_WRITE */
		uint32_t key;       /* across the network: the host's STag of it */
	} r[ESOCK_TSP_REGIONS_MAX];
};

/*
 * Registers [addr, addr + len) of process |pid| with |access| (and |key|):
 * its first and last octet read once to learn that tcpserverd may (-EPERM:
 * the process did not let it, -EFAULT: not mapped, -ESRCH: gone; pid 0, a
 * host across the network: not probed, its MR is the check).  Returns the
 * region (>= 1), -EINVAL (no access, len 0, a range that wraps) or
 * -ENOSPC (ESOCK_TSP_REGIONS_MAX in use).
 */
int tsp_region_add(struct tsp_regions *t, pid_t pid, uint64_t addr, uint64_t len, uint32_t access, uint32_t key);
/* The key |region| was registered with (0 for none). */
uint32_t tsp_region_key(const struct tsp_regions *t, uint32_t region);
/* 0, or -ENOENT (no such region). */
int tsp_region_del(struct tsp_regions *t, uint32_t region);
/*
 * [addr, addr + len) lies in |region|, registered with |access|: 0, or
 * -ENOENT (no such region), -EFAULT (outside it), -EACCES (not with that access).
 */
int tsp_region_check(const struct tsp_regions *t, uint32_t region, uint64_t addr, uint32_t len,
		     uint32_t access);

/* All |len| octets at |addr| of |pid| into |into| (or from |from| there): 0 or -errno (-EFAULT for a short one). */
int tsp_mem_read(pid_t pid, uint64_t addr, void *into, uint32_t len);
int tsp_mem_write(pid_t pid, uint64_t addr, const void *from, uint32_t len);

#endif /* ESOCK_TCPSERVER_HOSTMEM_H */
