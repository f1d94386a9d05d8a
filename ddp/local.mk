# ddp/: RFC 5041 headers, segmentation, placement.
libesock_core_la_SOURCES += \
	ddp/ddp_hdr.c
