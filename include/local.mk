# Installed public headers (#include <esock/...>): one per layer, plus the
# shared Terminate vocabulary and the umbrella esock/wire.h.
esockincludedir = $(includedir)/esock
esockinclude_HEADERS = \
	include/esock/export.h \
	include/esock/crc32c.h \
	include/esock/term.h \
	include/esock/mpa.h \
	include/esock/ddp.h \
	include/esock/rdmap.h \
	include/esock/wire.h \
	include/esock/iwarp.h \
	include/esock/esock.h
