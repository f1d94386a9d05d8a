# util/: byte order, CRC32C, logging, environment settings (shared by every layer).
libesock_core_la_SOURCES += \
	util/byteorder.h \
	util/crc32c.c \
	util/crc32c_portable.c \
	util/crc32c_impl.h \
	util/env.c \
	util/env.h \
	util/log.c \
	util/log.h \
	util/tls.h \
	util/version.c
