/* SPDX-License-Identifier: MIT */
/* tshark runner for oracle tests (see tshark_run.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/oracle/tshark_run.h"

const char *tshark_path(void)
{
	const char *env = getenv("TSHARK");

	if (env && *env && access(env, X_OK) == 0)
		return env;
	if (access("/usr/bin/tshark", X_OK) == 0)
		return "/usr/bin/tshark";
	if (system("command -v tshark >/dev/null 2>&1") == 0)
		return "tshark";
	return NULL;
}

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t ncap = (*cap ? *cap * 2 : 65536);
		char *nb;

		while (ncap < *len + n + 1)
			ncap *= 2;
		nb = realloc(*buf, ncap);
		if (!nb)
			return -1;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static int split_rows(struct tshark_out *out)
{
	size_t cap = 0;
	char *line = out->text, *next;

	for (; line && *line; line = next) {
		struct tshark_row *r;
		char *p;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (out->nrows == cap) {
			struct tshark_row *nr;

			cap = cap ? cap * 2 : 256;
			nr = realloc(out->rows, cap * sizeof(*nr));
			if (!nr)
				return -1;
			out->rows = nr;
		}
		r = &out->rows[out->nrows++];
		memset(r, 0, sizeof(*r));
		for (p = line; r->ncol < TSHARK_MAX_COLS;) {
			char *tab = strchr(p, '\t');

			r->col[r->ncol++] = p;
			if (!tab)
				break;
			*tab = '\0';
			p = tab + 1;
		}
	}
	return 0;
}

int tshark_run(const char *pcap, const char *filter, const char *const *fields,
	       struct tshark_out *out)
{
	const char *bin = tshark_path();
	char cmd[4096], chunk[8192];
	size_t len = 0, cap = 0, n;
	FILE *p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!bin)
		return -1;
	n = (size_t)snprintf(cmd, sizeof(cmd),
		"'%s' -n -r '%s' -o tcp.try_heuristic_first:TRUE "
		"--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp "
		"-o iwarp_ddp_rdmap.reassemble_iwarp_rdma_send:FALSE -Y '%s' ",
		bin, pcap, filter ? filter : "iwarp_mpa");
	if (fields) {
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n,
				      "-T fields -E occurrence=a -E aggregator=, -E separator=/t");
		for (const char *const *f = fields; *f && n < sizeof(cmd); f++)
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " -e %s", *f);
	} else {
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "-V");
	}
	if (n >= sizeof(cmd) - 16)
		return -1;
	strcat(cmd, " 2>/dev/null");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		if (append(&out->text, &len, &cap, chunk, n) < 0)
			break;
	rc = pclose(p);
	/* (No frame passed the filter: no rows, not a failure.) */
	if (rc == 0 && !out->text && append(&out->text, &len, &cap, "", 0) < 0)
		return -1;
	if (rc != 0 || !out->text) {
		fprintf(stderr, "tshark failed (status %d): %s\n", rc, cmd);
		return -1;
	}
	return fields ? split_rows(out) : 0;
}

void tshark_out_free(struct tshark_out *out)
{
	free(out->rows);
	free(out->text);
	memset(out, 0, sizeof(*out));
}
