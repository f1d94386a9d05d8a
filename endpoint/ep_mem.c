/* SPDX-License-Identifier: MIT */
/* Per-connection objects from populated chunks (ep_mem.h). */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "endpoint/ep_mem.h"
#include "util/atfork.h"
#include "util/log.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) /* (clang's way of saying it) */
#define EP_MEM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(EP_MEM_ASAN)
#include <sanitizer/lsan_interface.h>
/* LeakSanitizer looks for pointers in the heap, stacks and globals: blocks here hold some. */
#define SCAN(p, n) __lsan_register_root_region((p), (n))
#define UNSCAN(p, n) __lsan_unregister_root_region((p), (n))
#else
#define SCAN(p, n) ((void)(p), (void)(n))
#define UNSCAN(p, n) ((void)(p), (void)(n))
#endif

/*
 * Before each object: a cache line whose last 16 octets say its size class.
 * Objects start on a line of their own, so that the fields a struct keeps
 * together in its first lines (the socket's, the QP's: what every message
 * touches) take whole lines, not parts of one more.
 */
#define HDR 64
#define GRAIN 256                /* block sizes are multiples of this */
#define MAX_BLOCK (16 * 1024)    /* larger ones come from calloc */
#define NCLASS (MAX_BLOCK / GRAIN)
#define CHUNK (256 * 1024)       /* filled at once: a few dozen connections' worth */
#define MAGIC 0x65706d6du        /* "epmm" */
#define BIG 0u                   /* class of a block mapped for itself */

struct hdr {
	uint32_t cls; /* 1..NCLASS: GRAIN * cls octets with the header; BIG: mapped alone */
	uint32_t magic;
	uint64_t len; /* BIG: octets mapped */
};
_Static_assert(sizeof(struct hdr) <= HDR && HDR % 64 == 0, "objects start on a cache line");

/* The header of the object at |p|, and the object of the block at |b|. */
static struct hdr *hdr_of(void *p)
{
	return (struct hdr *)((uint8_t *)p - sizeof(struct hdr));
}

static void *obj_of(void *b)
{
	return (uint8_t *)b + HDR;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *free_list[NCLASS + 1];      /* blocks by class: next in the object's first octets */
static uint8_t *cur;                     /* the chunk being cut */
static size_t left;                      /* octets of it not cut yet */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* (A fork while another thread holds the lock would leave the child's copy held.) */
static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork(void)
{
	pthread_mutex_unlock(&lock);
}

static void init(void)
{
	esock_atfork(ESOCK_FORK_LEAVES, before_fork, after_fork, after_fork);
}

/* A block of |cls| from the current chunk, a new one when it is used up (lock held). */
static void *cut(unsigned cls)
{
	size_t len = (size_t)cls * GRAIN;
	void *b;

	if (left < len) {
		/* The rest of the old chunk (less than one block) is left unused. */
		void *c = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

		if (c == MAP_FAILED)
			return NULL;
		SCAN(c, CHUNK);
		cur = c;
		left = CHUNK;
	}
	b = cur; /* (new memory: zero) */
	cur += len;
	left -= len;
	return b;
}

void *ep_calloc(size_t n, size_t size)
{
	struct hdr *h;
	void *b;
	size_t want;
	unsigned cls;

	if (size && n > (SIZE_MAX - HDR) / size)
		return NULL;
	want = n * size + HDR;
	if (want > MAX_BLOCK) {
		/*
		 * Mapped for itself (zero, page-aligned, given back at ep_free):
		 * not a heap block that only a pointer into its middle refers to.
		 */
		size_t len = (want + 4095) & ~(size_t)4095;
		void *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (c == MAP_FAILED)
			return NULL;
		SCAN(c, len);
		h = hdr_of(obj_of(c));
		h->cls = BIG;
		h->magic = MAGIC;
		h->len = len;
		return obj_of(c);
	}
	cls = (unsigned)((want + GRAIN - 1) / GRAIN);
	pthread_once(&once, init);
	pthread_mutex_lock(&lock);
	if ((b = free_list[cls])) {
		memcpy(&free_list[cls], obj_of(b), sizeof(void *));
		pthread_mutex_unlock(&lock);
		memset(obj_of(b), 0, (size_t)cls * GRAIN - HDR);
	} else {
		b = cut(cls);
		pthread_mutex_unlock(&lock);
		if (!b)
			return NULL;
	}
	h = hdr_of(obj_of(b));
	h->cls = cls;
	h->magic = MAGIC;
	return obj_of(b);
}

void ep_free(void *p)
{
	struct hdr *h;

	if (!p)
		return;
	h = hdr_of(p);
	if (h->magic != MAGIC || h->cls > NCLASS) {
		log_error("ep_free: %p is not a block of ours; left alone", p);
		return;
	}
	if (h->cls == BIG) {
		size_t len = (size_t)h->len;

		UNSCAN((uint8_t *)p - HDR, len);
		munmap((uint8_t *)p - HDR, len);
		return;
	}
	h->magic = 0; /* (a second ep_free of it is refused above) */
	pthread_mutex_lock(&lock);
	memcpy(p, &free_list[h->cls], sizeof(void *));
	free_list[h->cls] = (uint8_t *)p - HDR;
	pthread_mutex_unlock(&lock);
}
