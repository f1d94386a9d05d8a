# libc/: the C library's calls resolved past the interposer (real.h) and the
# marks on the library's own descriptors (ownfd.h): beneath both the endpoint
# and the socket layer, so neither calls into the other's wrappers.
noinst_LTLIBRARIES += libesock_libc.la
libesock_libc_la_SOURCES = libc/calls.h libc/real.h libc/real.c libc/ownfd.h libc/ownfd.c
libesock_libc_la_LIBADD = -ldl
