# mpa/ start frames (RFC 5044 §7.1, RFC 6581): sources, unit tests, fuzz target.
