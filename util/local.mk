# util/: byte order, CRC32C, logging (shared by every layer).
libesock_core_la_SOURCES += \
	util/byteorder.h \
	util/crc32c.c \
	util/crc32c_portable.c \
	util/crc32c_impl.h \
	util/log.c \
	util/log.h \
	util/version.c
