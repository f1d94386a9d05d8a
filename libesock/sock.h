/* SPDX-License-Identifier: MIT */
/*
 * The extended sockets layer (internal): one struct esock_sock per DDPMODE
 * socket, found through the descriptor table (fdtab.h) by the wrappers of
 * preload.c.  The application's descriptor stays the kernel TCP socket; once
 * connected, the endpoint's QP owns it (esock_qp_connect_fd /
 * esock_request_from_fd).
 *
 * Data: every write is one RDMA Send per chunk of at most the peer's receive
 * size; blocking writes send straight from the caller's memory, non-blocking
 * ones copy into a bounded set of send slots.  Receives land in buffers the
 * process's sockets share, posted as Sends arrive (at most rdepth messages
 * wait per connection); reads copy out of them in order and give each back
 * once it is read.  Between two esock peers (both announce it in the MPA
 * private data) a full pool stops TCP reading instead of Terminating.
 *
 * Lifetime: socks are never freed, only recycled (type-stable memory), so a
 * call that raced with close() touches a valid object and finds, on its
 * re-check of the table, that its fd moved on.
 */
#ifndef ESOCK_LIBESOCK_SOCK_H
#define ESOCK_LIBESOCK_SOCK_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <esock/esock.h>
#include <esock/iwarp.h>

enum sock_state {
	SOCK_MARKED,      /* DDPMODE set, neither connected nor listening */
	SOCK_LISTENING,
	SOCK_TCP_CONNECTING, /* non-blocking connect in progress (MPA follows) */
	SOCK_MPA_CONNECTING, /* TCP is up, the MPA Request sent, the Reply awaited */
	SOCK_CONNECTED,   /* QP in RTS (or ended: see err / eof) */
	SOCK_PLAIN,       /* fell back to plain TCP: pass-through from now on */
	SOCK_FAILED,      /* connect or MPA failed; err says why */
	SOCK_OFFLOADED,   /* carried out by tcpserverd (off: sock_off.h) */
};

struct sock_opts {
	int mpa_rev, crc, markers, ird, ord, msgmode, rdepth, rsize, timeout_ms;
	char peer[16];
	uint8_t privdata[256];
	uint16_t privdata_len;
};

/* An epoll registration naming a socket (sock_epoll.c), found again at close. */
struct sock_epreg {
	int epfd, fd;
};

/* An event queue of the extended API (sock_api.c). */
struct sock_eq;
struct esock_stat_slot;
struct user_op;
struct ep_qp_snap;
struct sock_share;
struct sock_off;
struct sock_vb;

#define SOCK_SLOT_SIZE 65536
#define SOCK_SLOTS_MAX 16
/* Quick EAGAINs between two real looks at most (sock_recv.c quick_trusted). */
#define QUICK_SPAN_MAX 15

struct esock_sock {
	/*
	 * What every read, write and epoll look touches comes first, in two
	 * cache lines: at a thousand connections each further line of a socket
	 * is one more cache miss per message (docs/benchmarks.md).
	 */
	pthread_mutex_t lock;       /* state below; never held while blocking */
	atomic_int refs;            /* calls in progress */
	atomic_bool closing;
	bool nonblock;              /* O_NONBLOCK as the application set it */
	bool suspended;             /* copied by fork: resumed by the first call here */
	bool shut_rd, shut_wr;
	bool eof;                   /* the peer closed: reads return 0 when drained */
	bool tx_failed;             /* a Send failed: writes return EPIPE */
	/*
	 * epoll's look left a lazy QP's new input in its socket for the next
	 * read to take directly (sock_rx_defer); rx_hints counts those looks
	 * (an edge each).
	 */
	bool rx_hint;
	/*
	 * Whether a read after one that emptied the kernel's queue may say
	 * EAGAIN without a system call (sock_recv.c quick_trusted): that many
	 * more times before the next real look (quick_skip), and the span
	 * after a look that found nothing (quick_step, up to QUICK_SPAN_MAX).
	 */
	uint8_t quick_step, quick_skip;
	/*
	 * On the verbs backend (|vb|, sock_vb.h): a flag here, in a hole of
	 * the first line, for the checks on every call; the state further down.
	 */
	bool verbs;
	enum sock_state st;
	int fd;                     /* the descriptor it was created on */

	struct esock_qp *qp;
	struct esock_cq *cq;        /* send and receive completions */
	struct esock_sock_stats *stats; /* in the shared-memory slot, or stats_local */
	struct sock_off *off;       /* the offload mode's state (sock_off.h), or NULL */
	uint64_t rready;            /* octets ready to read */
	uint32_t rhead, rcount;     /* ring of rdone */
	uint32_t roff;              /* octets of the head message already read */
	int err;                    /* sticky errno once the connection failed */
	int waiters;                /* threads in esock_cq_wait on cq */
	uint32_t rx_hints;

	/*
	 * Receive pool: rdepth slots, each holding a buffer of rsize octets
	 * (sock_rxbuf.c, shared by the process's sockets) from the moment a
	 * Send needs one (the QP's refill hook posts it) until the
	 * application has read its message; a ring of completed ones.
	 */
	uint8_t **rbufs;            /* slot -> its buffer, NULL while free */
	uint32_t *rdone;            /* slots in arrival order */
	uint32_t *rlen;             /* message length per slot */
	uint64_t out_full;          /* times a write found no room (edge-triggered EPOLLOUT) */
	uint32_t peer_msg_max;      /* largest Send the peer accepts */
	uint32_t inflight;          /* sends posted, not yet completed */
	int rcvtimeo_ms, sndtimeo_ms; /* SO_RCVTIMEO, SO_SNDTIMEO (0: none; sock_timeo_read) */
	bool peer_esock;
	uint8_t peer_ann;           /* SOCK_ANN_* the peer announced */
	uint8_t peer_ann_len;       /* octets of its private data that are its announcement */
	bool cq_lost;               /* the CQ overflowed: completions were lost, wait for none */
	struct sock_opts o;         /* (its first line: msgmode, rdepth) */

	atomic_int nfds;            /* descriptors naming it (dup) */
	atomic_bool release_deferred; /* closed under a call of this thread (sock_release_fd) */
	bool release_graceful;      /* how the deferred release disconnects */
	struct esock_sock *next_free;
	bool linger_abort;          /* SO_LINGER {1, 0}: close resets (kept as it is set) */
	int cloexec_fd;             /* |cloexec| is FD_CLOEXEC of this fd (-1: ask the kernel) */
	bool cloexec;
	struct sock_share *share;   /* held by other processes too (sock_share.c), or NULL */
	struct sock_vb *vb;         /* on the verbs backend (sock_vb.h; |verbs| says so), or NULL */
	uint32_t share_gen;         /* the shared record this copy's state is at */
	bool nagle;                 /* the application turned TCP_NODELAY off */
	bool fd_private;            /* |fd| is the library's copy (the application closed its own) */
	/*
	 * The extended API was used (registrations, operations, event queues):
	 * its completions and one-sided targets progress without the
	 * application's calls, so the engine reads the QP (not lazy).
	 */
	bool async_api;

	/*
	 * Flow control (docs/libesock.md): the peer's receive depth and credit
	 * word (peer_cw_stag 0: none announced), which a socket that cannot
	 * stop reading (the verbs backend) writes its reposts into; ours is the
	 * QP's (EP_CREDIT_STAG: the endpoint gates Sends on it).
	 */
	uint32_t peer_rdepth, peer_cw_stag;
	uint64_t peer_cw_addr;

	struct esock_pd *pd;
	struct esock_listener *lst; /* listening: reads MPA Requests without blocking */
	struct esock_mr *all_mr;    /* local-only key for sends from any caller memory */

	pthread_mutex_t pool_lock;  /* repost and nrepost (a leaf: the refill hook takes it) */
	uint32_t *repost, nrepost;  /* free slots (a stack) */

	/* Send slots taken from the process's pool (sock_slots.c), by Send in flight. */
	uint32_t slots[SOCK_SLOTS_MAX];
	uint32_t nslots;
	uint64_t direct_seq, direct_done; /* blocking sends from caller memory */

	struct esock_sock_error last_error;
	struct esock_sock_stats stats_local;
	struct esock_stat_slot *slot;   /* sock_stat.c; NULL without shared memory */

	/* Extended API (sock_api.c). */
	struct sock_eq *eq[5];      /* bound event queue, by enum esock_op */
	struct user_op *user_ops;   /* user operations in flight, by wr_id index */
	uint32_t user_next;
	struct sock_mr *mrs;        /* regions registered through the API */
	int nmrs, capmrs;

	struct sock_epreg *epregs;  /* epoll sets holding it (sock_epoll.c), under lock */
	int nepregs, capepregs;
	int epparked;               /* of them, deleted by the application but kept (sock_epoll.c) */
};

/* A region registered through the extended API (sock_api.c): the verbs backend looks up keys. */
struct sock_mr {
	struct esock_mr *mr;
	uintptr_t addr;
	size_t len;
	unsigned access;
};

/*
 * Whether a read of |s| may leave whole messages in its QP's stage for the
 * next call (EP_NOW_STAY; sock_recv.c, sock_wc.c): no epoll set holds it (an
 * epoll set learns of input from the kernel's socket only; poll, select and
 * the waits ask sock_ready and ep_cq.c, which look at the stage), and no
 * other process may hold the connection.  Lock held.
 */
static inline bool sock_may_stay(const struct esock_sock *s)
{
	return !s->nepregs && !s->share;
}

/* Octets of the announcement appended to the MPA private data (sock_conn.c). */
#define ESOCK_ANNOUNCE_LEN 12
/*
 * Octets of the credit block before it: the STag and address of the
 * sender's credit word, into which a peer that cannot stop reading writes
 * how many receives it has posted again (older esock peers read only the
 * last ESOCK_ANNOUNCE_LEN octets).  docs/libesock.md, "Flow control".
 */
#define ESOCK_CREDIT_LEN 16
#define SOCK_ANNOUNCED (ESOCK_CREDIT_LEN + ESOCK_ANNOUNCE_LEN)
/* The announcement's flags. */
#define SOCK_ANN_PAUSES 1u  /* a Send that finds the pool full stops the reading */
#define SOCK_ANN_CREDITS 2u /* cannot stop reading: returns credits into the peer's word */
#define SOCK_ANN_WAKE 4u    /* wants each credit Write followed by an empty Send (a kernel QP's
			       waiters hear only completions) */
/*
 * Writes |s|'s credit block (its word: STag |cw_stag| at address |cw_addr|)
 * and announcement (SOCK_ANN_* |flags|), SOCK_ANNOUNCED octets at |p|.
 * sock_heard reads the peer's from the end of its private data
 * (peer_esock, peer_msg_max, peer_ann, peer_rdepth, peer_cw_*).
 */
void sock_announce(const struct esock_sock *s, uint8_t *p, unsigned flags, uint32_t cw_stag,
		   uint64_t cw_addr);
void sock_heard(struct esock_sock *s, const uint8_t *pd, uint16_t len);

/*
 * The smallest receive size a peer may announce (our own ESOCK_RCVSIZE has
 * the same floor): below it every write would be cut into tiny Sends (one
 * octet: 60 000 FPDUs for 60 000 octets), so the connection is refused.
 */
#define SOCK_PEER_RSIZE_MIN 64

/*
 * SGEs per Send: a blocking write's iovec pieces beyond it go into the next
 * Send (stream mode only; message mode copies).  Each one costs 16 octets
 * in every send-queue slot, memory an idle connection keeps.
 */
#define SOCK_MAX_SGE 4

/*
 * Send queue depth: the send slots (16), a blocking write's Sends from the
 * caller's memory (it waits for room when the queue is full) and the
 * extended API's operations (-EAGAIN beyond) share it.  Small, because every
 * slot of it is memory an idle connection keeps.
 */
#define SOCK_SQ_DEPTH 32

/* Receive queue depth for |rdepth| pool buffers (the extended API posts its own at 0). */
static inline int sock_rq_depth(int rdepth)
{
	return rdepth > 64 ? rdepth : 64;
}

/*
 * Pool and slot memory straight from mmap: page-aligned, and untouched
 * pages cost nothing (a malloc'd block of this size writes its header into
 * its first page: 4 KiB of every idle connection).  NULL when out of memory.
 */
void *sock_region_alloc(size_t len);
void sock_region_free(void *p, size_t len);
/*
 * Asks for the lines of |s|, its counters, CQ and QP that a read or write
 * visits (sock.c), when there are enough connections for them not to be in
 * the cache already (sock_prefetch_pays).
 */
void sock_prefetch(const struct esock_sock *s);
bool sock_prefetch_pays(void);
/* The extended API is in use on |s| (lock held): the engine reads its QP from now on. */
void sock_api_async(struct esock_sock *s);
/* Reads what its QP has waiting (a lazy QP: sock_wc.c), then takes completions.  Lock held. */
void sock_pull(struct esock_sock *s);
/* Slots held for Sends that will never complete (the QP is gone) go back. */
void sock_slots_release(struct esock_sock *s);

/*
 * Send slots (sock_slots.c): a process-wide pool of SOCK_SLOT_SIZE blocks
 * for non-blocking writes; a socket holds at most SOCK_SLOTS_MAX at a time.
 * get: 0 or -ENOMEM.
 */
int sock_slot_get(uint32_t *id);
uint8_t *sock_slot_addr(uint32_t id);
void sock_slot_put(uint32_t id);

/* A CQ for everything the socket's queues can hold: it never overflows. */
static inline int sock_cq_depth(int rdepth)
{
	return sock_rq_depth(rdepth) + SOCK_SQ_DEPTH;
}

/* wr_id kinds of the socket layer's work requests (top byte). */
#define SOCK_WR_RECV (1ull << 56)
#define SOCK_WR_SLOT (2ull << 56)
#define SOCK_WR_DIRECT (3ull << 56)
#define SOCK_WR_USER (4ull << 56)
#define SOCK_WR_CREDIT (5ull << 56) /* the verbs backend's credit Write and wake-up (sock_vb.c) */
#define SOCK_WR_KIND(id) ((id) & (0xffull << 56))

/* sock.c: lifetime and the table */
struct esock_sock *sock_get(int fd);        /* a reference, or NULL (pass-through) */
struct esock_sock *sock_get_any(int fd);    /* the same, fallen-back sockets included */
void sock_put(struct esock_sock *s);
struct esock_sock *sock_new(int fd);         /* installed in the table, nfds 1 */
/* The same for a TCP socket socket() made just now with |type| (no system calls). */
struct esock_sock *sock_new_born(int fd, int type);
/*
 * socket() made |fd|: with ESOCK_DDPMODE=all a TCP socket is in DDPMODE from
 * birth; with ESOCK_TCPSERVER it is offloaded (sock_off.h).  0, or -errno:
 * socket() fails.
 */
int sock_born(int fd, int domain, int type, int protocol);
/* The same for a connection accepted from listener |ls| (its flags set by the caller). */
struct esock_sock *sock_new_accepted(int fd, const struct esock_sock *ls);
int sock_close_fd(int fd);                   /* the close wrapper's work */
int sock_release_fd(int fd);                 /* the same without closing fd */
extern atomic_int sock_count;                /* live socks: 0 lets poll/select pass */
int sock_dup_fd(int oldfd, int newfd);       /* newfd now names oldfd's sock too */
void sock_keep_cloexec(struct esock_sock *s, int fd); /* connections never cross exec */
void sock_defaults(struct sock_opts *o);
void sock_timeo_read(struct esock_sock *s);  /* SO_RCVTIMEO / SO_SNDTIMEO from the kernel */
void sock_linger_set(struct esock_sock *s, const void *val, socklen_t len); /* SO_LINGER set */
void sock_fork_child(void);

/* sock_opt.c */
int sock_setopt(struct esock_sock *s, int level, int name, const void *val, socklen_t len);
int sock_getopt(struct esock_sock *s, int level, int name, void *val, socklen_t *len);
int sock_enable(int fd, int on);             /* ESOCK_DDPMODE on a socket not yet known */
bool sock_auto_ddp(int fd, const struct sockaddr *addr, bool listening);
/* sock_stdio.c: stdio streams on connections */
FILE *sock_stdio_open(int fd, const char *mode);
void sock_stdio_adopt_std(int fd);
int sock_stdio_vdprintf(struct esock_sock *s, const char *fmt, va_list ap);

/* sock_handoff.c: connections carried across exec */
void sock_note_inherit(int fd, bool inherit); /* the application's close-on-exec wish for fd */
char **sock_handoff_prepare(char *const envp[]);
void sock_handoff_abort(char **env);
/*
 * sock_carry.c: a quiet connection's state as octets for another process.
 * sock_carry_cap: the most octets |s|'s record can take.  sock_carry_write
 * (lock held): sends queued leave first when |drain|; returns the record's
 * length, its QP left quiesced (the caller ends that, or the process does),
 * or -errno (-EBUSY: not quiet, -EOPNOTSUPP: the extended API, -ENOSPC).
 * sock_carry_len: a record's length at |buf| or -EINVAL.  sock_carry_read
 * (lock held): |s| goes on from the record (its QP suspended: the first
 * call here drives it); 0 or -errno.
 */
size_t sock_carry_cap(const struct esock_sock *s);
ssize_t sock_carry_write(struct esock_sock *s, uint8_t *buf, size_t cap, bool drain);
ssize_t sock_carry_len(const uint8_t *buf, size_t len);
int sock_carry_read(struct esock_sock *s, const uint8_t *buf, size_t len);
/*
 * sock_share.c: a connection held by several processes after fork, used by
 * one at a time.  fork_prepare: before a fork (QP quiesced).  claim: by
 * sock_resume, the first call in a process (lock held): 0, or -EBUSY
 * (another process drives it now), -ECONNABORTED (its state was lost).
 * leave: the last close here (lock held): true when other processes still
 * hold it (then the connection is not ended); *quiesced: its QP was left
 * quiesced (the caller unquiesces once the socket is out of its reach).
 * exit: the process ends.
 */
void sock_share_fork_prepare(struct esock_sock *s);
int sock_share_claim(struct esock_sock *s);
bool sock_share_leave(struct esock_sock *s, bool *quiesced);
void sock_share_exit(struct esock_sock *s);
/* sock_conn.c / sock_wc.c, for it */
int sock_conn_resume(struct esock_sock *s, const struct ep_qp_snap *sn, const uint8_t *stage);
int sock_pool_inject(struct esock_sock *s, const void *data, uint32_t len);
void sock_handle_wc(struct esock_sock *s, const struct esock_wc *wc);

/* setsockopt(TCP_NODELAY) on a DDPMODE socket: 0 or -errno. */
int sock_set_nodelay(struct esock_sock *s, const void *val, socklen_t len);

/* sock_conn.c */
int sock_connect(struct esock_sock *s, const struct sockaddr *addr, socklen_t len);
/*
 * Drives a connecting socket (TCP, then MPA): 0 connected (or fell back to
 * plain TCP), -EAGAIN not yet, -errno; |wait_ms|: 0 none, -1 until done.
 */
int sock_connect_progress(struct esock_sock *s, int wait_ms);
/* How long a blocking connect waits for the MPA Reply before it returns (sock_connect). */
#define SOCK_CONNECT_GRACE_MS 50
unsigned sock_connect_ready(struct esock_sock *s, unsigned events); /* poll bits, progressing it */
/* What a poll of a connecting socket waits for: |fd| and |events|; returns ms until its MPA timeout (-1 none). */
int sock_connect_watch(struct esock_sock *s, int *fd, short *events);
int sock_listen(struct esock_sock *s, int backlog);
int sock_accept(struct esock_sock *ls, struct sockaddr *addr, socklen_t *len, int flags);
/* POLLIN: a connection to take (|look|: at the backlog too, system calls). */
unsigned sock_listen_ready(struct esock_sock *ls, unsigned events, bool look);
void sock_teardown(struct esock_sock *s, bool graceful);
/*
 * The process ends with |s| open (lock held): its queued sends leave first,
 * bounded by one linger time from *since, the last progress seen (sock_conn.c).
 */
void sock_flush_at_exit(struct esock_sock *s, int64_t *since);

/* sock_recv.c, sock_send.c, sock_ready.c, sock_conn.c (octets or -errno) */
ssize_t sock_recv(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		  int *msg_flags);
ssize_t sock_send(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags);
/* |all|: every octet goes, waiting if need be (data already taken from elsewhere: splice). */
ssize_t sock_send_ex(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     bool all);
/*
 * sendfile: the file's octets read straight into send slots (stream mode,
 * not offloaded); *off, or the file's position without it, moves by what went.
 */
ssize_t sock_sendfile(struct esock_sock *s, int in, off_t *off, size_t count);
void sock_drain(struct esock_sock *s);       /* takes completions (lock held) */
unsigned sock_ready(struct esock_sock *s, unsigned events); /* poll bits now true */
/*
 * A look at a lazy socket whose input came (epoll's, or poll/select's):
 * true when it is left in the socket for the application's next read to
 * take directly (nothing read of it yet), which sock_ready reports as
 * readable.  |blocking| says which sockets the look may leave it for:
 * epoll's, non-blocking ones; poll/select's, blocking ones (sock_ready.c).
 * |ready| non-NULL: when it defers, what sock_ready(s, events) would say,
 * asked under the same lock (one lock and look less per epoll event).
 */
bool sock_rx_defer(struct esock_sock *s, bool blocking, unsigned events, unsigned *ready);
int sock_shutdown(struct esock_sock *s, int how);
int sock_pool_setup(struct esock_sock *s);
/* The QP's refill hook (ep_qp_set_rq_refill; |arg| is the socket): posts one receive. */
int sock_pool_refill(void *arg);
void sock_pool_forget(struct esock_sock *s);
void sock_pool_free(struct esock_sock *s);
int sock_resume(struct esock_sock *s);       /* after fork: drive it in this process */
/*
 * sock_pool.c: a consumed slot back (|now|: a QP that waits for a receive
 * goes on at once, else once a quarter of the slots are free); the pool
 * opened (a QP that waits goes on).
 */
void sock_pool_return(struct esock_sock *s, uint32_t idx, bool now);
void sock_pool_open(struct esock_sock *s);
void sock_slot_done(struct esock_sock *s, uint32_t id);
/*
 * sock_wc.c: waits (lock held on entry and exit) up to a slice for
 * completions; 0, -EINTR, or -EBADF when the socket was closed meanwhile.
 */
int sock_wait_some(struct esock_sock *s, int64_t end);
/*
 * The same for a reader of a lazy QP: what arrives meanwhile is read into
 * |buf| (|len| octets; one message in message mode) when it fits there,
 * *placed octets in *msgs messages (ep_cq_wait_recv), else into the pool.
 */
int sock_wait_recv(struct esock_sock *s, int64_t end, void *buf, size_t len, size_t *placed,
		   uint32_t *msgs);
/* A message of |len| octets arrived in receive slot |idx|: the ring's tail (lock held). */
static inline void sock_ring_push(struct esock_sock *s, uint32_t idx, uint32_t len)
{
	s->rdone[(s->rhead + s->rcount) % (uint32_t)s->o.rdepth] = idx;
	s->rlen[idx] = len;
	s->rcount++;
	s->rready += len;
	s->stats->rx_msgs++;
	s->stats->rx_bytes += len;
}
/* What a data call checks first (lock held): 0, SOCK_FELL_BACK, or -errno. */
#define SOCK_FELL_BACK 1 /* the connect fell back to plain TCP while the call waited */
int sock_usable(struct esock_sock *s);
/*
 * sock_recv.c: copies the receive ring's messages into |iov| from octet
 * *skip on (a message at most in message mode; |peek|: they stay), each
 * consumed buffer back to the pool; *skip grows by the octets copied.
 */
size_t sock_copy_out(struct esock_sock *s, const struct iovec *iov, int iovcnt, bool peek,
		     size_t *skip, bool *trunc);
/* sock_recv.c: the call on a connection that fell back to plain TCP, to the kernel (unlocks). */
ssize_t sock_plain_io(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		      bool out, int *msg_flags);
/* SO_RCVTIMEO or SO_SNDTIMEO as a deadline in ep_now_ms() time, or -1. */
int64_t sock_timeo_deadline(int ms);
/* sock_send.c: whether our sends' completions are news (a writer found no room). */
void sock_room_wanted(struct esock_sock *s, bool on);

/* sock_ready.c */
/* poll's emulation; |mask|: the signal mask during its sleeps (ppoll's), or NULL (the thread's). */
int sock_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);

/* sock_epoll.c */
extern atomic_int sock_epoll_regs;           /* DDPMODE entries in epoll sets */

/*
 * Signals (sock_signal.c): the application's handlers behind a trampoline
 * that counts them per thread, and an emulated wait's sleeps.  The first
 * sleep of a wait runs as the application's own call would; before a later
 * one signals are blocked (the kernel's sleep lets in what the caller's
 * mask does), and a handler that ran since the wait began ends it: EINTR.
 */
int sock_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
__sighandler_t sock_signal_adopt(int sig, __sighandler_t prev);
struct sock_sleeps {
	unsigned runs;
	bool called, blocked;
	sigset_t old;
};
void sock_sleeps_begin(struct sock_sleeps *w);
/*
 * Before each kernel call of the wait (|sleeping|: one that may sleep):
 * *use is the mask to call it with; false when a handler ran (EINTR).
 */
bool sock_sleeps_next(struct sock_sleeps *w, bool sleeping, const sigset_t *mask,
		      const sigset_t **use);
void sock_sleeps_end(struct sock_sleeps *w); /* (errno kept) */
/*
 * A blocking read or write that waited in poll() (which the kernel never
 * restarts) and got EINTR: whether every handler that ran in this thread
 * since sock_sig_seen_begin (at least one) was installed with SA_RESTART,
 * so that the call goes on as a TCP read or write would.  Starts counting
 * anew.
 */
struct sock_sig_seen {
	unsigned runs, stops;
};
void sock_sig_seen_begin(struct sock_sig_seen *w);
bool sock_sig_restarts(struct sock_sig_seen *w);
extern atomic_bool sock_epoll_used;          /* markers were registered once */
int sock_epoll_pass(int epfd, struct epoll_event *out, int max, int timeout_ms,
		    const sigset_t *mask);       /* a set without DDPMODE entries */
int sock_epoll_ctl(struct esock_sock *s, int epfd, int op, int fd, struct epoll_event *ev);
int sock_epoll_wait(int epfd, struct epoll_event *out, int max, int timeout_ms,
		    const sigset_t *mask);
void sock_epoll_fresh(int epfd);
/* |fd| is watched by poll, select or another epoll set: if it is a set, its kicks ring. */
void sock_epoll_outside(int fd);
void sock_epoll_forget(struct esock_sock *s);

/* sock_stat.c: counters in shared memory for esock-stat */
void sock_stat_attach(struct esock_sock *s);
void sock_stat_detach(struct esock_sock *s);
void sock_stat_describe(struct esock_sock *s);   /* after a state change */
void sock_stat_fork_child(struct esock_sock **live, size_t n);

/* sock_api.c */
const struct esock_api *sock_api(void);
void sock_api_event(struct esock_sock *s, const struct esock_wc *wc);
void sock_api_release(struct esock_sock *s); /* user MRs and EQ bindings, at teardown */

#endif /* ESOCK_LIBESOCK_SOCK_H */
