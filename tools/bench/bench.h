/* SPDX-License-Identifier: MIT */
/*
 * esock-bench internals.  The codec benchmark (codec.c) is self-contained;
 * the endpoint benchmark runs a client (this process, or a child per CPU
 * placement) against a forked server child on 127.0.0.1.  The two talk over
 * a socketpair ("ctl") that carries one job description per measurement and
 * a handshake at each end, so the measured connections carry nothing but the
 * benchmark's own traffic.  Every endpoint figure is printed next to raw
 * kernel TCP doing the same exchange in the same run.
 */
#ifndef ESOCK_TOOLS_BENCH_H
#define ESOCK_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#include <esock/iwarp.h>

#define BENCH_SIZES_MAX 32
#define BENCH_MAX_SIZE (16u << 20)

enum bench_op { OP_SEND, OP_WRITE, OP_READ, OP_COUNT };
enum bench_kind { JOB_QUIT, JOB_LAT, JOB_BW };
enum bench_cpus { CPUS_NONE, CPUS_SAME, CPUS_SPLIT };

struct bench_opts {
	bool csv, lat, bw, codec;
	unsigned ops;                 /* 1 << enum bench_op */
	size_t lat_sizes[BENCH_SIZES_MAX], bw_sizes[BENCH_SIZES_MAX];
	int nlat, nbw;
	int iters;                    /* latency round trips per cell */
	double seconds;               /* target length of a bandwidth cell */
	int window;                   /* outstanding WRs (bandwidth) */
	int crc[2], ncrc;             /* 1 on, 0 off */
	int markers[2], nmarkers;
	int pack;                     /* 1: FPDUs share segments between two esock ends */
	int think_us;                 /* latency: the server's busy work per answer */
	int only;                     /* 0 both, 1 TCP only, 2 esock only (profiling) */
	enum bench_cpus cpus[3];
	int ncpus;
	const char *backend[2];       /* client's, server's $ESOCK_BACKEND (NULL: inherited) */
};

/* One measurement, as the client tells the server over ctl. */
struct bench_job {
	int32_t kind;                 /* enum bench_kind */
	int32_t op;                   /* enum bench_op */
	int32_t tcp;                  /* 1: the raw TCP baseline, 0: esock */
	int32_t crc, markers, window, pack;
	int32_t think_us;             /* latency: the server works this long before each answer */
	uint64_t size, count;         /* message size, messages (warm-up included) */
	uint64_t peer_addr;           /* the client's registered memory */
	uint32_t peer_stag;
};

/* What the server announces once, at start. */
struct bench_hello {
	uint16_t ep_port, tcp_port;
	uint64_t addr;                /* its registered memory: rbuf, then sbuf */
	uint32_t stag;
};

/* util.c */
double bench_now(void);
void bench_think(int us); /* busy for |us| microseconds (a server's work) */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bench_set_child(pid_t pid);
void bench_pin(int cpu);
int bench_parse_sizes(const char *s, size_t *out, int max);
void bench_put(int fd, const void *p, size_t len, const char *what);
void bench_get(int fd, void *p, size_t len, const char *what);
void ctl_put(int fd, const void *p, size_t len);
void ctl_get(int fd, void *p, size_t len);
void bench_sort(double *v, size_t n);
double bench_pct(const double *sorted, size_t n, double p);
const char *bench_op_name(int op);
/* "CPU model, N cores, kernel K, YYYY-MM-DD": where and when a figure was measured. */
void bench_machine(char *buf, size_t len);
const char *bench_cpus_name(enum bench_cpus c);

/* Registered memory of one process: rbuf (peers write / send into it) and sbuf. */
struct bench_mem {
	uint8_t *base;
	size_t half;
	struct esock_pd *pd;
	struct esock_mr *mr;
	uint32_t stag;
};

/* One side of an esock connection with the completion counters the tests use. */
struct bside {
	struct bench_mem *m;
	struct esock_cq *cq;
	struct esock_qp *qp;
	uint64_t sq_out;              /* signalled send WRs not yet completed */
	uint64_t sq_done, rq_done;
	uint64_t fresh[64];           /* wr_ids of receives completed since last asked */
	int nfresh;
};

/* epside.c */
void bm_init(struct bench_mem *m, size_t max_size);
void bs_create(struct bside *s, struct bench_mem *m);
void bs_destroy(struct bside *s);
void bs_param(const struct bench_job *j, struct esock_conn_param *p);
void bs_connect(struct bside *s, uint16_t port, const struct bench_job *j);
struct esock_listener *bs_listen(uint16_t *port);
void bs_accept(struct bside *s, struct esock_listener *l, const struct bench_job *j);
void bs_post_recv(struct bside *s, uint64_t id, uint8_t *buf, size_t len);
void bs_post(struct bside *s, enum esock_wr_opcode op, uint8_t *buf, size_t len, uint64_t raddr,
	     uint32_t rkey);
void bs_post_list(struct bside *s, enum esock_wr_opcode op, uint8_t *buf, size_t len, uint64_t raddr,
		  uint32_t rkey, int n);
void bs_wait(struct bside *s);
void bs_reap(struct bside *s, uint64_t max_out);

/* ep_lat.c / ep_bw.c: the client measures, the server answers. */
void ep_lat_client(struct bside *s, const struct bench_job *j, const struct bench_hello *h,
		   double *rtt_us);
void ep_lat_server(struct bside *s, const struct bench_job *j);
double ep_bw_client(struct bside *s, const struct bench_job *j, const struct bench_hello *h);
void ep_bw_server(struct bside *s, const struct bench_job *j);
/* Receives to post before connecting / accepting (an answer may come at once). */
void ep_bw_client_prepare(struct bside *s, const struct bench_job *j);
void ep_bw_server_prepare(struct bside *s, const struct bench_job *j);

/* tcp.c: the same exchanges over a plain TCP connection. */
int tcp_listen_any(uint16_t *port);
int tcp_accept1(int lfd);
int tcp_connect_lo(uint16_t port);
void tcp_lat_client(int fd, struct bench_mem *m, const struct bench_job *j, double *rtt_us);
void tcp_lat_server(int fd, struct bench_mem *m, const struct bench_job *j);
double tcp_bw_client(int fd, struct bench_mem *m, const struct bench_job *j);
void tcp_bw_server(int fd, struct bench_mem *m, const struct bench_job *j);

/* server.c / run.c */
void bench_server(int ctl, enum bench_cpus cpus, size_t max_size);
int bench_endpoint(const struct bench_opts *o);
/* Where the endpoint's connections go (--addr; the TCP baseline stays on 127.0.0.1). */
extern struct in_addr bench_ep_addr;

/* codec.c */
void codec_run(bool csv, double cell_seconds);

#endif /* ESOCK_TOOLS_BENCH_H */
