# libesock/: the extended sockets layer (sock_*.c, fdtab.c) and the libc
# wrappers that interpose it (preload.c), over the endpoint (endpoint/) and
# libc's table (libc/); only in libesock.so (the tools and tests that link
# libesock_ep.la keep libc's calls).  The installed library holds the wire
# codecs (esock/wire.h), the endpoint (esock/iwarp.h) and the sockets.
noinst_LTLIBRARIES += libesock_sock.la
libesock_sock_la_SOURCES = libesock/sock.h libesock/sock.c libesock/sock_opt.c \
	libesock/sock_conn.c libesock/sock_carry.c libesock/sock_share.c libesock/sock_handoff.c libesock/sock_stdio.c libesock/sock_pool.c libesock/sock_rxbuf.h libesock/sock_rxbuf.c libesock/sock_wc.c libesock/sock_vb.h libesock/sock_vb.c libesock/sock_recv.c libesock/sock_send.c libesock/sock_ready.c libesock/sock_signal.c libesock/sock_epoll.c libesock/sock_api.c libesock/sock_slots.c \
	libesock/sock_off.h libesock/sock_off_int.h libesock/sock_off.c libesock/sock_off_chan.c libesock/sock_off_reg.c libesock/sock_off_share.c \
	libesock/sock_stat.h libesock/sock_stat.c libesock/fdtab.h libesock/fdtab.c libesock/preload.c
libesock_sock_la_LIBADD = libesock_ep.la libesock_tsp_lib.la

lib_LTLIBRARIES += libesock.la
libesock_la_SOURCES =
# No sources of its own: everything comes from the convenience libraries.
nodist_EXTRA_libesock_la_SOURCES = dummy.c
libesock_la_LIBADD = libesock_sock.la -ldl
libesock_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=libesock/libesock.map
EXTRA_libesock_la_DEPENDENCIES = libesock/libesock.map
EXTRA_DIST += libesock/libesock.map.in
CLEANFILES += libesock/libesock.map
# The exported libc names come from libc/calls.h (-undef: no predefined
# macro such as "linux" may stand in for a name).
libesock/libesock.map: $(srcdir)/libesock/libesock.map.in $(srcdir)/libc/calls.h
	$(AM_V_GEN)$(MKDIR_P) libesock && \
	$(CPP) -P -undef -I$(srcdir) -x c $(srcdir)/libesock/libesock.map.in >$@-t && mv $@-t $@

