/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer, so `make check` runs every target
 * over its seed corpus under gcc, ASan/UBSan and valgrind.  Each file is read
 * into an exactly sized heap buffer (so ASan sees any overread).  With no
 * arguments it replays $srcdir/tests/fuzz/corpus/<name>/, the name taken from
 * the program's, tests/fuzz/replay_<name> (so one object serves every target).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -1;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int replay_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	int files = 0, rc = 0;

	if (n < 0) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[8192];

		if (names[i]->d_name[0] != '.') {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) >= sizeof(path))
				rc = -1;
			if (replay_file(path) < 0)
				rc = -1;
			files++;
		}
		free(names[i]);
	}
	free(names);
	printf("%s: replayed %d inputs\n", dir, files);
	if (files == 0) {
		fprintf(stderr, "%s: empty corpus\n", dir);
		return -1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	char dir[4096];
	const char *srcdir = getenv("srcdir");
	const char *slash = strrchr(argv[0], '/');
	const char *name = strstr(slash ? slash + 1 : argv[0], "replay_");
	int rc = 0;

	/* The empty input is always a case worth checking. */
	LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			rc |= replay_file(argv[i]) < 0;
		return rc ? 1 : 0;
	}
	if (!name || !name[7]) {
		fprintf(stderr, "%s: not named replay_<target>\n", argv[0]);
		return 1;
	}
	name += 7;
	/* Up to a dot: an executable suffix such as .exe is not the target's. */
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%.*s", srcdir ? srcdir : ".",
		 (int)strcspn(name, "."), name);
	return replay_dir(dir) < 0 ? 1 : 0;
}
