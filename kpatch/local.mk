# kpatch/: the kernel-assisted path (rdma-core verbs) -- see kpatch/README.md.
EXTRA_DIST += kpatch/README.md
