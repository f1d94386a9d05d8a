# rdmap/: RFC 5040 / RFC 7306 headers, Terminate, name tables.
libesock_core_la_SOURCES +=
