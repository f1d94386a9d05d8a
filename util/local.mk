# util/: byte order, CRC32C, logging, environment settings, the order of fork
# handlers (shared by every layer).
libesock_core_la_SOURCES += \
	util/atfork.c \
	util/atfork.h \
	util/byteorder.h util/range.h \
	util/crc32c.c \
	util/crc32c_portable.c \
	util/crc32c_impl.h \
	util/env.c \
	util/env.h \
	util/log.c \
	util/log.h \
	util/tls.h \
	util/version.c
