/* SPDX-License-Identifier: MIT */
/* rdma-core's functions, loaded at the verbs backend's first use (see vb_lib.h). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

/* The real declarations first: the table's types are checked against them below. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "util/log.h"

#undef ibv_reg_mr
/* Each entry is rdma-core's own signature (a wrong one would call through a wrong type). */
#define VB_LIB_CHECK(ret, name, params)                                                   \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
		       #name " in vb_lib.h is not rdma-core's");
#define VB_LIB_NO_REDIRECT /* (the real names here) */
#include "kpatch/verbs/vb_lib.h"
VB_LIB_CALLS(VB_LIB_CHECK)

struct vb_lib vb_lib;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -ENODEV;

static void load(void)
{
	/* librdmacm needs libibverbs (its own dependency), so that one comes along. */
	void *v = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	void *r = v ? dlopen("librdmacm.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	struct vb_lib t;

	if (!v || !r) {
		log_info("verbs backend: rdma-core not loadable (%s)", dlerror());
		return;
	}
#define VB_LIB_SYM(ret, name, params)                                          \
	if (!(*(void **)&t.f_##name = dlsym(#name[0] == 'i' ? v : r, #name))) { \
		log_warn("verbs backend: rdma-core lacks %s", #name);             \
		return;                                                        \
	}
	VB_LIB_CALLS(VB_LIB_SYM)
#undef VB_LIB_SYM
	vb_lib = t;
	load_rc = 0;
}

int vb_lib_load(void)
{
	pthread_once(&once, load);
	return load_rc;
}
