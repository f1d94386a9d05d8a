/* SPDX-License-Identifier: MIT */
/*
 * tcpserverd's own header: its state (one global, d: one thread owns it
 * all) and what its files hand each other.  Where things are:
 *   main.c       options, the event loop, the end, the counters (SIGUSR1)
 *   hosts.c      admission, a host's channel arriving, its bell, its queue served, its
 *                sockets' events (a parked call carried out again: resume), its end
 *   calls.c      a request checked and handed to its handler (call); the handlers of
 *                the calls on connections
 *   req.h, req.c a request being carried out, for the handlers; parking it on its socket
 *   calls_io.c   SEND and RECV
 *   calls_opt.c  options and names
 *   sockets.c    a host's socket table, epoll interest, close, addresses, options
 *   answer.c     answers and events into a host's response queue
 *   sendq.c      asynchronous send: the per-socket ring, credits, drains after close
 *   ahead.c      eager receive (DATA) and eager accept (ACCEPTED)
 *   forks.c      a host's sockets copied at FORK for its child
 *   hold.c       held sends: a response written in pieces goes to TCP whole
 *   cpu_watch.c  is tcpserverd's CPU its own (spin) or shared (sleep at once)? how
 *                long to spin (learnt from when the hosts' calls come after a sleep)
 */
#ifndef ESOCK_TCPSERVER_DAEMON_TSD_H
#define ESOCK_TCPSERVER_DAEMON_TSD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "tcpserver/chan.h"
#include "tcpserver/hostmem.h"
#include "tcpserver/proto/tsp.h"
#include "tcpserver/rchan.h"

#define MSG_MAX (ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX)

/* What an epoll event is about: tag in the low bits, host index above. */
enum { EV_LISTEN, EV_HOST_SOCK, EV_HOST_BELL, EV_NET, EV_DRAIN, EV_RLISTEN };

struct tsock {
	int fd;          /* -1: free */
	bool nonblock;   /* as the host asked: its calls never wait */
	uint32_t reg;    /* events it is in the epoll set for (edge-triggered), 0: not in it */
	uint32_t park_ev; /* what a parked call waits for */
	uint32_t want;   /* WATCH: events the host wants to hear of (READY) */
	uint32_t told;   /* the events last told in READY */
	/* A parked call: the request kept whole (decoded again when the socket is ready). */
	uint8_t *parked;
	uint32_t parked_len;
	uint32_t sent;   /* a parked blocking SEND: octets already handed to TCP */
	/* Asynchronous send: octets taken from the host, not yet handed to TCP (a ring). */
	uint8_t *obuf;   /* ESOCK_TSP_CREDIT_WINDOW octets, while used */
	uint32_t ohead, olen;
	uint32_t unreported; /* handed to TCP (or lost to an error), not yet in a CREDIT */
	int oerr;        /* what TCP said of queued octets: the next SEND's answer */
	int shut_how;    /* a SHUTDOWN waiting for the queue to drain (-1: none) */
	bool listener;   /* LISTEN succeeded on it */
	/* A listener bound to one address: its connections' local address, without a getsockname each. */
	bool local_fixed;
	struct esock_tsp_addr local;
	bool eager;      /* a listener that accepts ahead (eager accept): ACCEPTED events */
	/* Eager receive: octets pushed in DATA events, not yet given back by the host. */
	uint64_t calls, in, out; /* per connection: the host's calls on it, octets each way */
	bool eager_rx, rx_end;
	bool rx_blocked; /* its queue to the host had no room: pushed again each round */
	uint32_t rx_out;
	int rx_err;      /* what ended the stream, for the socket's next call */
	bool corked;     /* the host set TCP_CORK on it: its sends are never held (hold.c) */
};

/*
 * A host's sockets copied at its FORK, for its child to take with its
 * HELLO (ESOCK_TSP_F_INHERIT), under the same handles.  Copies nobody took
 * go after FORK_US (the child may never come: it exec'd something else).
 */
struct forked {
	uint32_t token;  /* 0: free */
	int64_t until_us;
	int n;
	struct { uint32_t handle; int fd; bool nonblock, listener; } *v;
};
#define FORK_US 10000000
#define MAX_FORKS 64

/* A closed socket whose queued octets still go out (asynchronous send), for a while. */
struct drain {
	int fd;
	uint8_t *obuf;
	uint32_t ohead, olen;
	int64_t until_us;
};
#define DRAIN_US 10000000 /* after that, what is still queued is dropped */

struct host {
	bool used;
	bool ready;           /* its channel came (until then only its Unix socket is watched) */
	int64_t since_us;     /* when it connected (a host without a channel goes after a second) */
	int usock;            /* shared memory: the host's Unix socket (its end is the host's end); else -1 */
	struct tsp_chan ch;   /* shared memory: the channel it sent */
	struct tsp_rchan *rc; /* across the network: the channel over its QP (it breaks: the host's end) */
	struct esock_shmq *req, *resp;
	int bell;             /* what the host rings: ch.bell, or rc's bell */
	uint32_t pid, flags;
	pid_t cred_pid;       /* shared memory: the host's pid as the kernel says (SO_PEERCRED); else 0 */
	struct tsp_regions regions; /* registered buffers (REG) */
	bool hello;
	bool asleep;          /* said it sleeps on its request queue (esock_shmq_sleep_begin) */
	bool ring_owed;       /* answers committed this round whose ring comes at its end (answer_rings) */
	struct tsock *socks;  /* by handle - 1 */
	int nsocks;           /* handles in use */
	int low_free;         /* no free handle below this index (new_handle looks from it) */
	bool held_back;       /* eager accept stopped at the socket limit: a CLOSE lets it on */
	int neager;           /* its listeners that accept ahead */
	bool rx_blocked;      /* eager receive waits for room in its queue (looked at each round) */
	/* A held send (hold.c): its socket's handle (0: none), since, until; what holds taught. */
	uint32_t held;
	int64_t held_at_us, held_until_us;
	int hold_gap_us, hold_trust;
	unsigned hold_probe;
	/*
	 * Its sockets' files may be open elsewhere too (FORK copied them, or it
	 * took a parent's copies): a close must take them out of the epoll set
	 * itself, else a close does (no EPOLL_CTL_DEL per connection).
	 */
	bool fds_shared;
	/* counters */
	uint64_t calls, failed, parked, bytes_in, bytes_out, accepted;
	uint64_t reg_in, reg_out; /* octets placed into / taken from its registered buffers */
	uint64_t holds, hold_hits; /* sends held, and joined by their follower */
};

struct tsd {
	const char *path, *net;
	int max_hosts, max_socks, verbose;
	int spin_us, spin_cap_us; /* -p: a fixed spin; -1 (the default): learnt, up to spin_cap_us (-P) */
	bool ring_each;           /* -R: each answer rings a sleeping host at once (not once a round) */
	bool no_hold;             /* -m: no send is held for its follower (hold.c) */
	int nheld;                /* hosts with a held send */
	bool more_follows;        /* more of this round's work follows: answers may owe their ring */
	int rings_owed;           /* hosts whose ring_owed is set */
	int lfd, epfd;
	struct esock_listener *rl; /* -l: hosts of other nodes */
	struct host *hosts;
	struct drain *drains;
	int ndrains, capdrains;
	struct forked forks[MAX_FORKS];
	int nforks;
	volatile sig_atomic_t quit, dump;
	uint64_t refused_hosts, dropped_hosts;
	bool sent;                /* octets handed to TCP since the last yield (cpu_spin_yield) */
	uint8_t out[MSG_MAX];
};

extern struct tsd d;

#define logv(...) do { if (d.verbose) fprintf(stderr, "tcpserverd: " __VA_ARGS__); } while (0)

static inline int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline uint64_t key(int kind, int host, int sock)
{
	return (uint64_t)kind | (uint64_t)(uint32_t)host << 8 | (uint64_t)(uint32_t)sock << 32;
}

/* The EV_* kind of an event's key. */
static inline int key_kind(uint64_t k)
{
	return (int)(k & 0xff);
}

/* answer.c */
bool answer_ex(struct host *h, struct esock_tsp_msg *m, bool quiet);
bool answer(struct host *h, struct esock_tsp_msg *m);
void answer_rings(void);
bool reply(struct host *h, const struct esock_tsp_hdr *q, int result);

/* sockets.c */
struct tsock *sock_of(struct host *h, uint32_t handle);
int new_handle(struct host *h, int fd, bool nonblock);
bool interest(int hi, uint32_t handle, struct tsock *s);
void unwatch(struct tsock *s);
void sock_close(struct host *h, uint32_t handle, bool keep_queued);
int to_sockaddr(const struct esock_tsp_addr *a, struct sockaddr_storage *ss, socklen_t *len);
void from_sockaddr(const struct sockaddr_storage *ss, struct esock_tsp_addr *a);
bool option_ok(int level, int name);

/* sendq.c */
bool credit(struct host *h, uint32_t handle, struct tsock *s);
void flush_out(struct host *h, struct tsock *s);
void drain_add(struct tsock *s);
void drain_end(int i);
void drain_step(int fd);

/* ahead.c */
bool push_data(struct host *h, uint32_t handle, struct tsock *s, bool edge_open);
bool rx_start(struct host *h, int hi, uint32_t handle, struct tsock *s);
bool accept_ahead(struct host *h, uint32_t handle, struct tsock *s);
bool eager_arm(struct host *h, int hi, uint32_t handle, struct tsock *s);

/* forks.c */
int fork_copy(struct host *h);
int fork_take(struct host *h, uint32_t token);
int forks_expire(void);

/* calls.c */
int call(struct host *h, int hi, const struct esock_tsp_msg *q, const uint8_t *rec, uint32_t len);
bool tell_ready(struct host *h, uint32_t handle, struct tsock *s);

/* hosts.c */
void host_drop_ex(int hi, const char *why, bool graceful);
void host_drop(int hi, const char *why);
void host_new(void);
void host_new_net(void);
void host_sock(int hi);
void host_bell(int hi);
int host_deadlines(void);
int host_serve(int hi);
void retry_rx(int hi);
void resume(int hi, uint32_t handle, uint32_t events);

/* hold.c */
bool hold_send(struct host *h, uint32_t handle, const struct tsock *s, uint32_t len, bool certain);
void hold_end(int hi, bool hit);
void hold_forget(struct host *h, uint32_t handle);
int hold_expire(void);

/* cpu_watch.c */
void cpu_watch_open(void);
bool cpu_shared(int64_t now);
void cpu_spin_yield(void);
int spin_window(void);
void spin_learn(int64_t waited_us, bool host_rang); /* (not with -p) */

#endif
