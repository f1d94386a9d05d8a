/* SPDX-License-Identifier: MIT */
/* pcap synthesis of TCP connections for oracle tests (see pcap_synth.h). */
#include "config.h"

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/oracle/pcap_synth.h"
#include "util/byteorder.h"

#define TCP_HLEN 20
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10

struct synth {
	pcap_t *dead;
	pcap_dumper_t *dump;
	uint64_t usec; /* capture clock: 10 us per frame */
	uint32_t snaplen;
	enum synth_link link;
	int ipv6;
};

void synth_set_snaplen(struct synth *s, uint32_t snaplen)
{
	s->snaplen = snaplen;
}

void synth_fault(struct synth_conn *c, enum synth_fault kind, unsigned at)
{
	c->fault = kind;
	c->fault_at = c->nseg + at;
}

static int link_dlt(enum synth_link l)
{
	static const int dlt[] = { DLT_EN10MB, DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL, DLT_RAW };

	return dlt[l];
}

struct synth *synth_open(const char *path)
{
	return synth_open_link(path, SYNTH_ETH, 0);
}

struct synth *synth_open_link(const char *path, enum synth_link link, int ipv6)
{
	struct synth *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->link = link;
	s->ipv6 = ipv6;
	s->dead = pcap_open_dead(link_dlt(link), 65535);
	s->dump = s->dead ? pcap_dump_open(s->dead, path) : NULL;
	if (!s->dump) {
		fprintf(stderr, "pcap_dump_open %s: %s\n", path, s->dead ? pcap_geterr(s->dead) : "no pcap");
		if (s->dead)
			pcap_close(s->dead);
		free(s);
		return NULL;
	}
	s->usec = 1700000000ull * 1000000ull;
	return s;
}

int synth_close(struct synth *s)
{
	int rc = pcap_dump_flush(s->dump);

	pcap_dump_close(s->dump);
	pcap_close(s->dead);
	free(s);
	return rc == 0 ? 0 : -1;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += esock_get_be16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Writes the link header for |et| (ethertype) at |f|; returns its length. */
static size_t put_link(const struct synth *s, uint8_t *f, uint16_t et, int src, int dst)
{
	switch (s->link) {
	case SYNTH_SLL:
		memset(f, 0, 16);
		esock_put_be16(f + 2, 1);
		esock_put_be16(f + 4, 6);
		f[6] = 0x02;
		f[11] = (uint8_t)(src + 1);
		esock_put_be16(f + 14, et);
		return 16;
	case SYNTH_SLL2:
		memset(f, 0, 20);
		esock_put_be16(f, et);
		f[11] = 6;
		f[12] = 0x02;
		f[17] = (uint8_t)(src + 1);
		return 20;
	case SYNTH_NULL: {
		uint32_t fam = et == 0x86dd ? 10 : 2; /* AF_INET6 / AF_INET on Linux */

		memcpy(f, &fam, 4); /* host order, as DLT_NULL is */
		return 4;
	}
	case SYNTH_RAW:
		return 0;
	default: /* Ethernet, maybe with a VLAN tag; locally administered MACs */
		memset(f, 0, 12);
		f[0] = 0x02;
		f[5] = (uint8_t)(dst + 1);
		f[6] = 0x02;
		f[11] = (uint8_t)(src + 1);
		if (s->link == SYNTH_VLAN) {
			esock_put_be16(f + 12, 0x8100);
			esock_put_be16(f + 14, 42);
			esock_put_be16(f + 16, et);
			return 18;
		}
		esock_put_be16(f + 12, et);
		return 14;
	}
}

/* Writes the IP header (v4 or v6) for a TCP segment of |l4| octets. */
static size_t put_ip(const struct synth_conn *c, uint8_t *ip, size_t l4, int src, int dst)
{
	if (c->cap->ipv6) {
		memset(ip, 0, 40);
		ip[0] = 0x60;
		esock_put_be16(ip + 4, (uint16_t)l4);
		ip[6] = 6;
		ip[7] = 64;
		ip[8] = 0x20; ip[9] = 0x01; ip[10] = 0x0d; ip[11] = 0xb8; ip[23] = (uint8_t)(src + 1);
		ip[24] = 0x20; ip[25] = 0x01; ip[26] = 0x0d; ip[27] = 0xb8; ip[39] = (uint8_t)(dst + 1);
		return 40;
	}
	memset(ip, 0, 20);
	ip[0] = 0x45;
	esock_put_be16(ip + 2, (uint16_t)(20 + l4));
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 6;
	esock_put_be32(ip + 12, c->ip[src]);
	esock_put_be32(ip + 16, c->ip[dst]);
	esock_put_be16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	return 20;
}

static void put_frame(struct synth_conn *c, enum synth_dir dir, uint8_t flags,
		      const uint8_t *data, size_t len)
{
	static uint8_t f[64 + 40 + TCP_HLEN + 65536];
	int src = dir == SYNTH_C2S ? 0 : 1, dst = 1 - src;
	size_t lh = put_link(c->cap, f, c->cap->ipv6 ? 0x86dd : 0x0800, src, dst);
	size_t ih = put_ip(c, f + lh, TCP_HLEN + len, src, dst);
	uint8_t *tcp = f + lh + ih;
	struct pcap_pkthdr h;

	memset(tcp, 0, TCP_HLEN);
	esock_put_be16(tcp, c->port[src]);
	esock_put_be16(tcp + 2, c->port[dst]);
	esock_put_be32(tcp + 4, c->seq[src]);
	esock_put_be32(tcp + 8, (flags & TCP_ACK) ? c->seq[dst] : 0);
	tcp[12] = (TCP_HLEN / 4) << 4;
	tcp[13] = flags;
	esock_put_be16(tcp + 14, 65535);
	if (len)
		memcpy(tcp + TCP_HLEN, data, len);
	if (!c->cap->ipv6) { /* TCP checksum over the IPv4 pseudo-header (tshark does not check) */
		uint8_t pseudo[12];

		memcpy(pseudo, f + lh + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = 6;
		esock_put_be16(pseudo + 10, (uint16_t)(TCP_HLEN + len));
		esock_put_be16(tcp + 16, csum_fold(csum_add(csum_add(0, pseudo, 12), tcp, TCP_HLEN + len)));
	}
	c->cap->usec += 10;
	h.ts.tv_sec = (long)(c->cap->usec / 1000000);
	h.ts.tv_usec = (long)(c->cap->usec % 1000000);
	h.caplen = h.len = (uint32_t)(lh + ih + TCP_HLEN + len);
	if (c->cap->snaplen && h.caplen > c->cap->snaplen)
		h.caplen = c->cap->snaplen;
	pcap_dump((u_char *)c->cap->dump, &h, f);
	c->seq[src] += (uint32_t)len + ((flags & (TCP_SYN | TCP_FIN)) ? 1 : 0);
}

void synth_conn_open(struct synth *s, struct synth_conn *c, unsigned id, uint16_t mss)
{
	memset(c, 0, sizeof(*c));
	c->cap = s;
	c->ip[0] = 0xc0000201; /* 192.0.2.1 (TEST-NET-1, RFC 5737) */
	c->ip[1] = 0xc0000202;
	c->port[0] = (uint16_t)(40000 + id);
	c->port[1] = (uint16_t)(20000 + id);
	c->isn[0] = c->seq[0] = 0x10000000u * (id % 15) + 1000;
	c->isn[1] = c->seq[1] = 0xfffff000u - 977 * id; /* wraps soon: tests seq wrap */
	c->mss = mss;
	put_frame(c, SYNTH_C2S, TCP_SYN, NULL, 0);
	put_frame(c, SYNTH_S2C, TCP_SYN | TCP_ACK, NULL, 0);
	put_frame(c, SYNTH_C2S, TCP_ACK, NULL, 0);
}

/* Writes one data segment at |seq| and its acknowledgement. */
static void put_data(struct synth_conn *c, enum synth_dir dir, uint32_t seq, const uint8_t *p, size_t n)
{
	uint32_t save = c->seq[dir];

	c->seq[dir] = seq;
	put_frame(c, dir, TCP_ACK | TCP_PSH, p, n);
	c->seq[dir] = save;
	put_frame(c, dir == SYNTH_C2S ? SYNTH_S2C : SYNTH_C2S, TCP_ACK, NULL, 0);
}

void synth_send(struct synth_conn *c, enum synth_dir dir, const void *data, size_t len)
{
	static uint8_t held[65536], flipped[65536];
	static size_t held_len;
	static uint32_t held_seq;
	static bool holding;
	const uint8_t *p = data;

	while (len > 0) {
		size_t n = len < c->mss ? len : c->mss;
		uint32_t seq = c->seq[dir];
		bool hit = c->fault && c->nseg++ == c->fault_at;

		c->seq[dir] += (uint32_t)n;
		if (hit && c->fault == SYNTH_SWAP) {
			memcpy(held, p, n);
			held_len = n;
			held_seq = seq;
			holding = true;
		} else if (hit && c->fault == SYNTH_FLIP) {
			memcpy(flipped, p, n);
			flipped[n / 2] ^= 0x10;
			put_data(c, dir, seq, flipped, n);
		} else if (!(hit && c->fault == SYNTH_DROP)) {
			put_data(c, dir, seq, p, n);
			if (hit && c->fault == SYNTH_DUP)
				put_data(c, dir, seq, p, n);
			if (holding && !hit) {
				put_data(c, dir, held_seq, held, held_len);
				holding = false;
			}
		}
		p += n;
		len -= n;
	}
}

void synth_conn_close(struct synth_conn *c)
{
	put_frame(c, SYNTH_C2S, TCP_FIN | TCP_ACK, NULL, 0);
	put_frame(c, SYNTH_S2C, TCP_FIN | TCP_ACK, NULL, 0);
	put_frame(c, SYNTH_C2S, TCP_ACK, NULL, 0);
}
