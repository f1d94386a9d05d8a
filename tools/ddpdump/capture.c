/* SPDX-License-Identifier: MIT */
/* Packet input and link/IP/TCP parsing for ddpdump (see capture.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <zlib.h>

#include "tools/ddpdump/capture.h"
#include "util/byteorder.h"

/* fopencookie glue so libpcap reads a gzip stream through a FILE *. */
static ssize_t gz_read(void *c, char *buf, size_t n)
{
	int r = gzread((gzFile)c, buf, (unsigned)(n > 1u << 30 ? 1u << 30 : n));

	return r < 0 ? -1 : r;
}

static int gz_close(void *c)
{
	return gzclose((gzFile)c) == Z_OK ? 0 : -1;
}

static FILE *open_gz(const char *path)
{
	cookie_io_functions_t io = { .read = gz_read, .close = gz_close };
	gzFile gz = gzopen(path, "rb");
	FILE *f;

	if (!gz)
		return NULL;
	f = fopencookie(gz, "r", io);
	if (!f)
		gzclose(gz);
	return f;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static pcap_t *open_live(const char *ifname, char *err)
{
	pcap_t *p = pcap_create(ifname, err);

	if (!p)
		return NULL;
	pcap_set_snaplen(p, 262144);
	pcap_set_promisc(p, 0);
	pcap_set_timeout(p, 100);
	if (pcap_activate(p) < 0) {
		snprintf(err, PCAP_ERRBUF_SIZE, "%s: %s", ifname, pcap_geterr(p));
		pcap_close(p);
		return NULL;
	}
	return p;
}

pcap_t *capture_open(const char *path, bool live, const char *filter, char *err)
{
	pcap_t *p;
	struct bpf_program prog;

	if (live) {
		p = open_live(path, err);
	} else if (ends_with(path, ".gz")) {
		FILE *f = open_gz(path);

		p = f ? pcap_fopen_offline(f, err) : NULL;
		if (!f)
			snprintf(err, PCAP_ERRBUF_SIZE, "%s: cannot open gzip file", path);
	} else {
		p = pcap_open_offline(path, err);
	}
	if (!p)
		return NULL;
	if (!capture_dlt_supported(pcap_datalink(p))) {
		snprintf(err, PCAP_ERRBUF_SIZE, "%s: unsupported link type %s", path,
			 pcap_datalink_val_to_name(pcap_datalink(p)) ? pcap_datalink_val_to_name(pcap_datalink(p)) : "?");
		pcap_close(p);
		return NULL;
	}
	if (filter && *filter) {
		if (pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 || pcap_setfilter(p, &prog) < 0) {
			snprintf(err, PCAP_ERRBUF_SIZE, "filter '%s': %s", filter, pcap_geterr(p));
			pcap_close(p);
			return NULL;
		}
		pcap_freecode(&prog);
	}
	return p;
}

bool capture_dlt_supported(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
#endif
	case DLT_NULL:
	case DLT_LOOP:
	case DLT_RAW:
#ifdef DLT_IPV4
	case DLT_IPV4:
	case DLT_IPV6:
#endif
		return true;
	default:
		return false;
	}
}

/* Finds the network-layer start and its ethertype-style protocol. */
static enum parse_result link_layer(int dlt, const uint8_t *f, uint32_t cap, uint32_t *off,
				    uint16_t *proto)
{
	uint32_t o = 0;
	uint16_t et;

	switch (dlt) {
	case DLT_EN10MB:
		if (cap < 14)
			return PARSE_TRUNCATED;
		et = esock_get_be16(f + 12);
		o = 14;
		while (et == 0x8100 || et == 0x88a8 || et == 0x9100) { /* VLAN / QinQ */
			if (cap < o + 4)
				return PARSE_TRUNCATED;
			et = esock_get_be16(f + o + 2);
			o += 4;
		}
		break;
	case DLT_LINUX_SLL:
		if (cap < 16)
			return PARSE_TRUNCATED;
		et = esock_get_be16(f + 14);
		o = 16;
		break;
#ifdef DLT_LINUX_SLL2
	case DLT_LINUX_SLL2:
		if (cap < 20)
			return PARSE_TRUNCATED;
		et = esock_get_be16(f);
		o = 20;
		break;
#endif
	case DLT_NULL:
	case DLT_LOOP: {
		uint32_t fam;

		if (cap < 4)
			return PARSE_TRUNCATED;
		/* DLT_NULL is host order, DLT_LOOP network order: accept both. */
		fam = dlt == DLT_LOOP ? esock_get_be32(f) : (uint32_t)(f[0] | f[1] << 8 | f[2] << 16 | (uint32_t)f[3] << 24);
		if (fam > 0xffff)
			fam = esock_get_be32(f);
		et = fam == 2 ? 0x0800 : (fam == 10 || fam == 24 || fam == 28 || fam == 30) ? 0x86dd : 0;
		o = 4;
		break;
	}
	default: /* raw IP */
		if (cap < 1)
			return PARSE_TRUNCATED;
		et = (f[0] >> 4) == 6 ? 0x86dd : 0x0800;
		break;
	}
	*off = o;
	*proto = et;
	return PARSE_OK;
}

static enum parse_result ip_layer(const uint8_t *p, uint32_t cap, struct tcp_seg *s,
				  uint32_t *l4off, uint32_t *l4len, uint16_t et)
{
	if (et == 0x0800) {
		uint32_t ihl, tot;

		if (cap < 20)
			return PARSE_TRUNCATED;
		ihl = (uint32_t)(p[0] & 0xf) * 4;
		tot = esock_get_be16(p + 2);
		if ((p[0] >> 4) != 4 || ihl < 20 || tot < ihl)
			return PARSE_BAD;
		if (p[9] != 6 || (esock_get_be16(p + 6) & 0x1fff))
			return PARSE_NOT_TCP; /* not TCP, or a non-first fragment */
		s->af = AF_INET;
		memcpy(s->src, p + 12, 4);
		memcpy(s->dst, p + 16, 4);
		*l4off = ihl;
		*l4len = tot - ihl;
		return PARSE_OK;
	}
	if (et == 0x86dd) {
		if (cap < 40)
			return PARSE_TRUNCATED;
		if ((p[0] >> 4) != 6)
			return PARSE_BAD;
		if (p[6] != 6)
			return PARSE_NOT_TCP; /* extension headers are not followed */
		s->af = AF_INET6;
		memcpy(s->src, p + 8, 16);
		memcpy(s->dst, p + 24, 16);
		*l4off = 40;
		*l4len = esock_get_be16(p + 4);
		return PARSE_OK;
	}
	return PARSE_NOT_TCP;
}

enum parse_result capture_parse(int dlt, const struct pcap_pkthdr *h, const uint8_t *f,
				struct tcp_seg *s)
{
	uint32_t cap = h->caplen, off, l4off, l4len, thl;
	uint16_t et;
	enum parse_result r;

	memset(s, 0, sizeof(*s));
	s->ts = (double)h->ts.tv_sec + (double)h->ts.tv_usec * 1e-6;
	if ((r = link_layer(dlt, f, cap, &off, &et)) != PARSE_OK)
		return r;
	if ((r = ip_layer(f + off, cap - off, s, &l4off, &l4len, et)) != PARSE_OK)
		return r;
	off += l4off;
	if (cap < off + 20)
		return PARSE_TRUNCATED;
	thl = (uint32_t)(f[off + 12] >> 4) * 4;
	if (thl < 20 || thl > l4len)
		return PARSE_BAD;
	if (cap < off + thl)
		return PARSE_TRUNCATED;
	s->sport = esock_get_be16(f + off);
	s->dport = esock_get_be16(f + off + 2);
	s->seq = esock_get_be32(f + off + 4);
	s->ack = esock_get_be32(f + off + 8);
	s->flags = f[off + 13];
	s->wire_len = l4len - thl;
	s->data = f + off + thl;
	s->len = cap - off - thl < s->wire_len ? cap - off - thl : s->wire_len;
	return PARSE_OK;
}
