# mpa/ FPDU framing (RFC 5044 §4: length, markers, pad, CRC): sources, unit tests, fuzz target.
