# mpa/: RFC 5044 / RFC 6581 framing (start frames, FPDU transmit and receive).
libesock_core_la_SOURCES +=
