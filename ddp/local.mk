# ddp/: RFC 5041 headers, segmentation, placement: sources, unit tests, fuzz targets.
libesock_core_la_SOURCES += \
	ddp/ddp_hdr.c
