/* SPDX-License-Identifier: MIT */
/* A host's registered memory, read and written by tcpserverd (hostmem.h). */
#include "config.h"

#include <errno.h>
#include <sys/uio.h>

#include "tcpserver/hostmem.h"
#include "util/range.h"

int tsp_mem_read(pid_t pid, uint64_t addr, void *into, uint32_t len)
{
	struct iovec l = { into, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!len)
		return 0;
	if ((n = process_vm_readv(pid, &l, 1, &r, 1, 0)) < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int tsp_mem_write(pid_t pid, uint64_t addr, const void *from, uint32_t len)
{
	struct iovec l = { (void *)(uintptr_t)from, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!len)
		return 0;
	if ((n = process_vm_writev(pid, &l, 1, &r, 1, 0)) < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int tsp_region_add(struct tsp_regions *t, pid_t pid, uint64_t addr, uint64_t len, uint32_t access, uint32_t key)
{
	uint8_t probe;
	int rc;

	if (!len || !access || (access & ~(uint32_t)(ESOCK_TSP_REG_READ | ESOCK_TSP_REG_WRITE)) ||
	    addr + len < addr || addr > UINTPTR_MAX - len)
		return -EINVAL;
	/* (a write access is not probed: writing would race with the process's own writes) */
	if (pid && ((rc = tsp_mem_read(pid, addr, &probe, 1)) < 0 ||
		    (rc = tsp_mem_read(pid, addr + len - 1, &probe, 1)) < 0))
		return rc;
	for (unsigned i = 0; i < ESOCK_TSP_REGIONS_MAX; i++)
		if (!t->r[i].len) {
			t->r[i].addr = addr;
			t->r[i].len = len;
			t->r[i].access = access;
			t->r[i].key = key;
			return (int)i + 1;
		}
	return -ENOSPC;
}

uint32_t tsp_region_key(const struct tsp_regions *t, uint32_t region)
{
	return region >= 1 && region <= ESOCK_TSP_REGIONS_MAX && t->r[region - 1].len ? t->r[region - 1].key : 0;
}

int tsp_region_del(struct tsp_regions *t, uint32_t region)
{
	if (region < 1 || region > ESOCK_TSP_REGIONS_MAX || !t->r[region - 1].len)
		return -ENOENT;
	t->r[region - 1].len = 0;
	return 0;
}

int tsp_region_check(const struct tsp_regions *t, uint32_t region, uint64_t addr, uint32_t len,
		     uint32_t access)
{
	uint64_t base, rlen;

	if (region < 1 || region > ESOCK_TSP_REGIONS_MAX || !(rlen = t->r[region - 1].len))
		return -ENOENT;
	base = t->r[region - 1].addr;
	if (!esock_range_within(base, rlen, addr, len))
		return -EFAULT;
	return (t->r[region - 1].access & access) == access ? 0 : -EACCES;
}
