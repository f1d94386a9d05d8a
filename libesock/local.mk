# libesock/: the installed library.  For now it exports the wire codecs
# (esock/wire.h); the extended sockets layer joins it in later issues.
lib_LTLIBRARIES += libesock.la
libesock_la_SOURCES =
# No sources of its own yet: everything comes from the codec core.
nodist_EXTRA_libesock_la_SOURCES = dummy.c
libesock_la_LIBADD = libesock_core.la
libesock_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/libesock/libesock.map
EXTRA_libesock_la_DEPENDENCIES = libesock/libesock.map
EXTRA_DIST += libesock/libesock.map
