/* SPDX-License-Identifier: MIT */
/*
 * tcpserver/hostmem.c: a host's registered regions.  A transfer is allowed
 * inside a region with its access only (never one octet past it, never by
 * a sum that wraps), registration probes the memory (unmapped: -EFAULT),
 * and the reads and writes move exactly the octets asked, here on this
 * process's own memory (process_vm_readv/writev of our own pid).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcpserver/hostmem.h"
#include "tests/unit/testutil.h"

static uint8_t mem[8192];

START_TEST(bounds_and_access)
{
	static struct tsp_regions t;
	uint64_t a = (uintptr_t)mem;
	int r, w;

	memset(&t, 0, sizeof(t));
	ck_assert_int_gt(r = tsp_region_add(&t, getpid(), a, 4096, ESOCK_TSP_REG_READ, 0), 0);
	ck_assert_int_gt(w = tsp_region_add(&t, getpid(), a + 4096, 4096, ESOCK_TSP_REG_WRITE, 0), 0);
	ck_assert_int_ne(r, w);
	/* Inside, to the last octet; empty at either end. */
	ck_assert_int_eq(tsp_region_check(&t, r, a, 4096, ESOCK_TSP_REG_READ), 0);
	ck_assert_int_eq(tsp_region_check(&t, r, a + 4095, 1, ESOCK_TSP_REG_READ), 0);
	ck_assert_int_eq(tsp_region_check(&t, r, a + 4096, 0, ESOCK_TSP_REG_READ), 0);
	/* One octet past, before it, a length that would wrap the sum. */
	ck_assert_int_eq(tsp_region_check(&t, r, a + 1, 4096, ESOCK_TSP_REG_READ), -EFAULT);
	ck_assert_int_eq(tsp_region_check(&t, r, a - 1, 2, ESOCK_TSP_REG_READ), -EFAULT);
	ck_assert_int_eq(tsp_region_check(&t, r, a + 4097, 0, ESOCK_TSP_REG_READ), -EFAULT);
	ck_assert_int_eq(tsp_region_check(&t, r, a + 8, UINT32_MAX, ESOCK_TSP_REG_READ), -EFAULT);
	ck_assert_int_eq(tsp_region_check(&t, r, UINT64_MAX - 2, 8, ESOCK_TSP_REG_READ), -EFAULT);
	/* The other access, the other region's octets. */
	ck_assert_int_eq(tsp_region_check(&t, r, a, 16, ESOCK_TSP_REG_WRITE), -EACCES);
	ck_assert_int_eq(tsp_region_check(&t, w, a + 4096, 16, ESOCK_TSP_REG_READ), -EACCES);
	ck_assert_int_eq(tsp_region_check(&t, w, a, 16, ESOCK_TSP_REG_WRITE), -EFAULT);
	/* Regions that are not there. */
	ck_assert_int_eq(tsp_region_check(&t, 0, a, 1, ESOCK_TSP_REG_READ), -ENOENT);
	ck_assert_int_eq(tsp_region_check(&t, ESOCK_TSP_REGIONS_MAX + 1, a, 1, ESOCK_TSP_REG_READ), -ENOENT);
	ck_assert_int_eq(tsp_region_check(&t, UINT32_MAX, a, 1, ESOCK_TSP_REG_READ), -ENOENT);
	ck_assert_int_eq(tsp_region_del(&t, r), 0);
	ck_assert_int_eq(tsp_region_del(&t, r), -ENOENT);
	ck_assert_int_eq(tsp_region_del(&t, 0), -ENOENT);
	ck_assert_int_eq(tsp_region_check(&t, r, a, 1, ESOCK_TSP_REG_READ), -ENOENT);
	/* A host across the network (pid 0): not probed (its MR is the check), its key kept. */
	ck_assert_int_gt(r = tsp_region_add(&t, 0, 4096, 16, ESOCK_TSP_REG_READ, 0x1234), 0);
	ck_assert_uint_eq(tsp_region_key(&t, r), 0x1234);
	ck_assert_uint_eq(tsp_region_key(&t, w), 0);
	ck_assert_uint_eq(tsp_region_key(&t, ESOCK_TSP_REGIONS_MAX + 1), 0);
}
END_TEST

START_TEST(registration_refused)
{
	static struct tsp_regions t;
	uint64_t a = (uintptr_t)mem;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *hole = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(tsp_region_add(&t, getpid(), a, 0, ESOCK_TSP_REG_READ, 0), -EINVAL);
	ck_assert_int_eq(tsp_region_add(&t, getpid(), a, 16, 0, 0), -EINVAL);
	ck_assert_int_eq(tsp_region_add(&t, getpid(), a, 16, 4, 0), -EINVAL);
	ck_assert_int_eq(tsp_region_add(&t, getpid(), UINT64_MAX - 7, 16, ESOCK_TSP_REG_READ, 0), -EINVAL);
	/* Its last page unmapped: the probe of the last octet fails. */
	ck_assert_ptr_ne(hole, MAP_FAILED);
	ck_assert_int_eq(munmap(hole + pg, (size_t)pg), 0);
	ck_assert_int_eq(tsp_region_add(&t, getpid(), (uintptr_t)hole, (uint64_t)pg + 1, ESOCK_TSP_REG_READ, 0), -EFAULT);
	ck_assert_int_gt(tsp_region_add(&t, getpid(), (uintptr_t)hole, (uint64_t)pg, ESOCK_TSP_REG_READ, 0), 0);
	munmap(hole, (size_t)pg);
	/* All in use. */
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < ESOCK_TSP_REGIONS_MAX; i++)
		ck_assert_int_eq(tsp_region_add(&t, getpid(), a, 1, ESOCK_TSP_REG_READ, 0), i + 1);
	ck_assert_int_eq(tsp_region_add(&t, getpid(), a, 1, ESOCK_TSP_REG_READ, 0), -ENOSPC);
}
END_TEST

START_TEST(reads_and_writes_move_exactly)
{
	uint8_t out[100], back[100];

	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 13);
	ck_assert_int_eq(tsp_mem_read(getpid(), (uintptr_t)mem + 7, out, sizeof(out)), 0);
	ck_assert_mem_eq(out, mem + 7, sizeof(out));
	memset(back, 0xa5, sizeof(back));
	ck_assert_int_eq(tsp_mem_write(getpid(), (uintptr_t)mem + 200, back, sizeof(back)), 0);
	ck_assert_mem_eq(mem + 200, back, sizeof(back));
	ck_assert_uint_eq(mem[199], (uint8_t)(199 * 13));
	ck_assert_uint_eq(mem[300], (uint8_t)(300 * 13));
	ck_assert_int_eq(tsp_mem_read(getpid(), 8, out, 4), -EFAULT); /* (page 0) */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostmem");
	TCase *tc = tcase_create("regions");

	tcase_add_test(tc, bounds_and_access);
	tcase_add_test(tc, registration_refused);
	tcase_add_test(tc, reads_and_writes_move_exactly);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
