# kpatch/: the kernel path -- see kpatch/README.md.  The verbs backend
# (esock/iwarp.h over rdma-core) is built into the endpoint library when
# configure found rdma-core's development files (--with-verbs).
EXTRA_DIST += kpatch/README.md kpatch/linux
if HAVE_VERBS
# (rdma-core itself is loaded when first used, not linked: vb_lib.h)
libesock_ep_la_SOURCES += kpatch/verbs/vb.h kpatch/verbs/vb_lib.h kpatch/verbs/vb_lib.c \
	kpatch/verbs/vb_dev.c kpatch/verbs/vb_cq.c kpatch/verbs/vb_qp.c kpatch/verbs/vb_cm.c \
	kpatch/verbs/vb_backend.c kpatch/verbs/vb_keys.h kpatch/verbs/vb_keys.c
else
EXTRA_DIST += kpatch/verbs/vb.h kpatch/verbs/vb_lib.h kpatch/verbs/vb_lib.c \
	kpatch/verbs/vb_dev.c kpatch/verbs/vb_cq.c kpatch/verbs/vb_qp.c kpatch/verbs/vb_cm.c \
	kpatch/verbs/vb_backend.c kpatch/verbs/vb_keys.h kpatch/verbs/vb_keys.c
endif
