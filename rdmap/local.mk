# rdmap/: RFC 5040 / RFC 7306 headers, Terminate, name tables: sources, unit tests, fuzz targets.
