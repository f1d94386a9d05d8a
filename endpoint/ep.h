/* SPDX-License-Identifier: MIT */
/*
 * Internal structures of the user-level iWARP endpoint (include/esock/iwarp.h).
 *
 * Ownership and threads.  A QP's protocol state (MPA tx/rx, DDP placement,
 * the message in progress in each direction, the inbound Read queue) is
 * touched only by the thread that holds the QP's progress token
 * (ep_qp_progress): the application thread posting or waiting, or the engine
 * thread.  Nobody blocks on the token: a thread that finds it taken leaves
 * its wish in qp->want and the holder does the work before it lets go
 * (a combining handoff).  Work requests enter through lock-free rings
 * (ep_ring.h) that any thread may post to and that the token holder consumes
 * in place; completions leave through the CQ's lock-free ring.  No lock on
 * the data path.
 */
#ifndef ESOCK_ENDPOINT_EP_H
#define ESOCK_ENDPOINT_EP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <esock/iwarp.h>
#include <esock/mpa.h>
#include <esock/rdmap.h>

#include "endpoint/ep_profile.h"
#include "endpoint/ep_ring.h"
#include "endpoint/ep_sock.h"

struct esock_backend;

#define EP_SGE_MAX 15          /* + the header piece = ESOCK_MPA_TX_PIECES_MAX */
#define EP_DEPTH_DEFAULT 128
#define EP_IRD_DEFAULT 8
#define EP_ORD_DEFAULT 8
#define EP_IRD_MAX 128
#define EP_CTRL_MAX 128        /* whole ULPDU of a Read Request / Terminate */
/*
 * Payload left worth a receive call straight into place.  A smaller one is
 * copied out of the stage: one receive call then brings a run of small
 * FPDUs, where reading each payload into place took a call each (ep_rx.c).
 */
#define EP_DIRECT_MIN 16384
#define EP_TIMEOUT_DEFAULT_MS 10000
#define EP_REATTACH_MS 2          /* engine takes a detached QP back after this */
#define EP_SLEEP_INPUT_MS 20      /* ep_qp_sleep_input's longest sleep in one receive */
#define EP_LOCAL_LOWAT_DEFAULT (64 * 1024)     /* peer on our CPU (ep_sockbuf.c) */
#define EP_LOCAL_RCVBUF_DEFAULT (1024 * 1024)
#define EP_LOCAL_LARGE (32 * 1024)   /* a message this large asks for the unsent bound */
#define EP_LOCAL_RUN 4               /* messages in a row before the bound turns */

struct esock_pd {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	uint32_t id;
	atomic_int refs; /* MRs and QPs */
};

struct esock_mr {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	struct esock_pd *pd;
	uint8_t *addr;
	uint64_t len;
	unsigned access;
	uint32_t stag;   /* index << 8 | key */
	bool valid;      /* under the MR table lock */
};

/* ep_mr.c: the process-wide STag table. */
int ep_mr_region(uint32_t stag, struct esock_ddp_region *out);
/* Checks an SGE against |pd| and |need| (ESOCK_ACCESS_*); 0, -EACCES. */
int ep_mr_check_sge(const struct esock_pd *pd, const struct esock_sge *sge, unsigned need);
/* Remote invalidation (Send with Invalidate): 0, -ENOENT (not ours), -EINVAL. */
int ep_mr_invalidate_remote(const struct esock_pd *pd, uint32_t stag);

/*
 * Who hears of a CQ's completions (only when armed, or while somebody sleeps
 * on it): its own eventfd, made only for whoever asks for it (esock_cq_fd,
 * esock_cq_arm: the endpoint API, poll and the extended API's event
 * queues); watchers (an epoll set's doorbell, sock_epoll.c); and the
 * threads sleeping in esock_cq_wait, each on an eventfd of its own.  So a
 * connection watched by epoll costs no descriptor for its CQ.
 */
struct ep_cq_watch {
	void (*fn)(void *arg, int key);
	void *arg;
	int key;
};

struct esock_cq {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	struct ep_ring ring;   /* lock-free: many QPs produce, many threads poll */
	struct esock_wc *wc;   /* slots */
	atomic_bool overflow;
	_Atomic int efd;       /* its own eventfd, or -1 (none asked for) */
	atomic_int armed;      /* 0, 1 any completion, 2 solicited only */
	atomic_int sleepers;
	atomic_int pollers;    /* threads asleep in poll() on efd (ep_cq_poll_begin) */
	atomic_bool efd_kicked; /* efd was written since its last read */
	/* ep_cq.c look_first: waits to go before the next look ahead of sleeping, the last step */
	_Atomic uint8_t look_skip, look_step;
	atomic_uint sleeps;    /* times a waiter slept in poll() (diagnostics, tests) */
	atomic_uint kicks;     /* times its listeners were told (notify: diagnostics, tests) */
	atomic_int spin_us;    /* how long its waiters spin before they sleep (ep_spin.h) */
	atomic_int refs;       /* QPs bound */
	pthread_mutex_t lock;  /* the lists below */
	struct esock_qp **qps; /* bound QPs, for progress while waiting */
	int nqps, qcap;
	struct ep_cq_watch *watch;
	int nwatch, capwatch;
	int *sleep_efd;        /* eventfds of the threads sleeping on it */
	int nsleep, capsleep;
};

void ep_cq_push(struct esock_cq *cq, const struct esock_wc *wc, bool solicited);
/*
 * The same, waking only threads asleep in esock_cq_wait: the CQ stays armed
 * and its descriptor and watchers (poll, epoll sets) hear nothing.
 */
void ep_cq_push_quiet(struct esock_cq *cq, const struct esock_wc *wc);
/*
 * Between these two (nested, one thread), the waiters of the CQs completed
 * into are woken only at the end: the caller serves a QP under its progress
 * token and calls ep_cq_wake_now after letting the token go (ep_cq.c).
 */
void ep_cq_hold_wakes(void);
void ep_cq_wake_now(void);
int ep_cq_bind(struct esock_cq *cq, struct esock_qp *qp);
void ep_cq_unbind(struct esock_cq *cq, struct esock_qp *qp);

/*
 * A send work request as queued (SGEs copied).  Slots are qp->sq_stride
 * octets: the header and qp->max_sge SGEs, so a QP made for few SGEs (a
 * socket's receive queue: one) costs few octets per slot.
 */
struct ep_sqe {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint64_t len;
	enum esock_wr_opcode opcode;
	unsigned flags;
	uint32_t inval_stag;
	uint32_t rkey;
	int num_sge;
	bool sent;       /* wholly on the wire (Read: request sent) */
	bool done;
	enum esock_wc_status status;
	struct esock_sge sge[]; /* qp->max_sge */
};

struct ep_rqe {
	uint64_t wr_id;
	uint64_t len;
	int num_sge;
	struct esock_sge sge[]; /* qp->max_recv_sge */
};

/* An inbound RDMA Read being answered (responder side). */
struct ep_irqe {
	uint8_t *src;     /* registered source memory */
	uint32_t len;
	uint32_t sink_stag;
	uint64_t sink_to;
};

/* The slot of ring position |pos|. */
#define EP_SQE(qp, pos) \
	((struct ep_sqe *)((uint8_t *)(qp)->sq + (size_t)ep_ring_idx(&(qp)->sqr, (pos)) * (qp)->sq_stride))
#define EP_RQE(qp, pos) \
	((struct ep_rqe *)((uint8_t *)(qp)->rq + (size_t)ep_ring_idx(&(qp)->rqr, (pos)) * (qp)->rq_stride))

enum ep_rx_kind { EP_RX_NONE, EP_RX_PLACE, EP_RX_CTRL };

/* The received DDP segment in progress. */
struct ep_rx_cur {
	enum ep_rx_kind kind;         /* (these four in one cache line: every read looks) */
	int iovcnt;
	size_t payload_len, got;
	struct esock_rdmap_msg m;
	uint8_t hdr[ESOCK_DDP_UNTAGGED_HLEN]; /* for a Terminate's copy; fields above are cleared per segment */
	struct iovec iov[EP_SGE_MAX]; /* target of payload [0, payload_len) */
	uint8_t ctrl[EP_CTRL_MAX];    /* control messages, whole ULPDU */
	size_t ctrl_len;
	uint16_t ulpdu_len;
};

/* The message being transmitted. */
/* EP_TX_NOW: a socket's message sent in the caller's call, without a send WR (ep_tx_send_now). */
enum ep_tx_kind { EP_TX_NONE, EP_TX_SQ, EP_TX_READ_RESP, EP_TX_TERM, EP_TX_RTR, EP_TX_NOW };

struct ep_tx_cur {
	enum ep_tx_kind kind;
	struct ep_sqe *sqe;      /* EP_TX_SQ */
	struct esock_ddp_seg seg;
	const struct esock_sge *sge; /* payload pieces (SQ) */
	int num_sge;
	struct esock_sge resp_sge;   /* Read Response source as one piece */
	struct esock_rdmap_read_req read_req; /* Read Request being sent */
	uint32_t now_len;        /* EP_TX_NOW: its payload */
	bool plain;              /* EP_TX_SQ: a plain Send of one FPDU (ep_tx.c plain_fits) */
	bool last_fpdu_built;
};

/* FPDUs gathered for one sendmsg (ep_txbatch.c). */
#define EP_BATCH_IOV 1024            /* IOV_MAX */
#define EP_BATCH_FPDU_SCRATCH 768    /* copied octets of one FPDU at most (markers included) */
#define EP_FRAME_MAX 256             /* ULPDUs framed whole by copying (ep_tx.c batch_fpdu) */
#define EP_BATCH_MSGS 32             /* whole messages joined in one batch at most */

/* Octets a batch gathers before it is written: from the L2 cache's size (ep_txbatch.c). */
size_t ep_batch_bytes(void);

struct ep_batch {
	struct iovec iov[EP_BATCH_IOV];
	int cnt, next;               /* entries, first not fully written */
	size_t left;                 /* octets not yet written */
	size_t used;                 /* scratch octets taken */
	bool ends_msg;               /* the batch holds the message's last FPDU */
	/*
	 * Let TCP pack messages into segments (no MSG_EOR): towards a peer that
	 * accepts FPDUs anywhere in a segment (esock's socket layer), small
	 * messages then share segments as TCP's own writes do.
	 */
	bool pack;
	bool more;                   /* MSG_MORE: TCP holds it for what comes next (rtr_cork) */
	bool eor;                    /* MSG_EOR: the next message starts a segment (ep_tx.c) */
	size_t done;                 /* octets written since the batch was empty */
	/*
	 * Whole messages in the batch before the current one (pack only): send
	 * WR sq_from + i completes once the batch's octets up to sq_end[i] are
	 * written (each as soon as it is out, not when the whole batch is).
	 */
	uint32_t sq_from, sq_built;
	size_t sq_end[EP_BATCH_MSGS];
	uint8_t scratch[16384];
	uint8_t small[256];          /* a small batch flattened for one write */
	/*
	 * A message sent now (ep_tx_send_now) larger than the scratch holds:
	 * the payload TCP did not take is copied here (EP_SPARE_SPILL) and
	 * given back once written.
	 */
	uint8_t *spill;
};

void ep_batch_reset(struct ep_batch *b);

/*
 * What a QP needs only while it transmits: the MPA transmitter's plan, the
 * header scratch and the batch (38 KB).  Taken from a per-thread cache when
 * a message is to go out and given back once everything is written, so an
 * idle QP holds none (ep_txbatch.c).  The plan and header pieces lie before
 * |batch|: ep_batch_add copies those.
 */
struct ep_txwork {
	struct esock_mpa_tx tx;
	uint8_t txhdr[ESOCK_RDMAP_HDR_MAX + 64];
	struct ep_batch batch;
};

/* A work area set up to go on at stream position |pos|; NULL when out of memory. */
struct ep_txwork *ep_txwork_get(bool crc, bool markers, uint32_t pos, bool pack);
/* Gives |w| back (its batch written out); the stream position to go on at. */
uint32_t ep_txwork_put(struct ep_txwork *w);
/* True when one more FPDU plan fits. */
bool ep_batch_room(const struct ep_batch *b);
/* Appends the MPA plan of |tx| (copying pieces in [lo, lo + span)) and marks it written. */
void ep_batch_add(struct ep_batch *b, struct esock_mpa_tx *tx, const void *lo, size_t span);
/*
 * Appends a small FPDU written whole into the scratch (esock_mpa_tx_frame),
 * one iovec entry shared with the small FPDU before it.  0 or a negative code.
 */
int ep_batch_frame(struct ep_batch *b, struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt);
/* Writes what is left: 1 all out, 0 the socket is full, or -errno. */
int ep_batch_write(struct ep_batch *b, int fd);
/*
 * Copies the unwritten octets that lie outside the batch (a caller's memory)
 * into its scratch, or when they do not fit there (at most EP_SEND_NOW_BIG)
 * into its spill, so that the caller may reuse that memory at once.  False
 * when they are more or no spill can be had (nothing changed then).
 */
bool ep_batch_own(struct ep_batch *b);


struct esock_qp {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	/*
	 * What every message's send or receive looks at comes first, in four
	 * cache lines (then info's first line): at a thousand connections each
	 * further line of a QP is one more cache miss per message
	 * (docs/benchmarks.md).  Fields marked (holder) are the token holder's.
	 */
	_Atomic int state;          /* enum esock_qp_state */
	atomic_bool busy;           /* progress token */
	atomic_bool quiesced;       /* ... held by ep_qp_quiesce: a caller waits it out (ep_qp.c) */
	atomic_bool rx_eof;         /* that FIN came */
	atomic_bool rx_paused;      /* a Send waits for a receive to be posted */
	atomic_bool rx_staged;      /* a reader's call left whole FPDUs in the stage for the next one (ep_rx.c) */
	atomic_uint want;           /* EP_WANT_* left for the token holder */
	atomic_uint want_eng;       /* the engine's, kept apart: void once it let go of the QP */
	int fd;
	/*
	 * Its input is read by the calls of whoever waits for it (a socket:
	 * read, poll, epoll_wait, esock_cq_wait), as a TCP socket's is: the
	 * engine watches it only while a responder holds sends back until the
	 * first FPDU (a server that speaks first, then waits for nothing), so no
	 * thread wake-up sits between the wire and the application.  Set by
	 * the socket layer before the QP starts (ep_engine_lazy_ok); off for
	 * sockets that expose memory to one-sided operations.
	 */
	bool lazy;
	bool hold_watch;            /* lazy, held, with sends waiting: the engine reads for the first FPDU */
	bool cr_watch;              /* lazy, Sends wait for credits: the engine reads for them (ep_tx.c) */
	bool pollout;               /* EPOLLOUT requested */
	/*
	 * The socket layer's initiator: its RTR is written with MSG_MORE and
	 * waits in the kernel's queue, so that it leaves in one segment with
	 * the first message (one segment and one server wake-up less per
	 * connection).  rtr_corked while it waits: ep_qp_uncork pushes it when
	 * the application waits for input first; else TCP's persist timer
	 * does within about 0.2 s (RFC 6581 needs it first, not at once).
	 */
	bool rtr_cork;
	atomic_bool rtr_corked;
	bool tx_hold;               /* (holder) responder: wait for the initiator's first FPDU */
	bool rtr_pending;           /* (holder) initiator: RTR to send first */
	bool term_pending;          /* (holder) a Terminate to send at the next FPDU boundary */
	bool tx_pack;               /* (holder) ep_batch.pack for this peer */
	bool tx_pack_one;           /* pack only messages of one FPDU (ep_qp_set_pack_one) */
	/*
	 * Credits towards a peer that cannot stop reading (a kernel QP): a
	 * Send starts only while cr_sent - cr_word < cr_limit (0: no limit).
	 * cr_word is the peer's count of receives posted again, big-endian, as
	 * its RDMA Writes to EP_CREDIT_STAG put it (ep_qp_set_credits).
	 */
	uint64_t cr_word;
	uint64_t cr_sent;           /* (holder) Sends started */
	uint32_t cr_limit;
	bool tx_more;               /* (holder) the last write held its tail back (MSG_MORE): push it */
	bool rx_small;              /* (holder) the last message began with a small FPDU: the next stage read is large (ep_rx.c) */
	bool rx_cont;               /* (holder) the last FPDU did not end its message (DDP L = 0) */
	bool rx_was_direct;         /* (holder) the last payload was read straight into place */
	uint16_t rx_tail;           /* (holder) octets a direct read asks for behind the payload at rx_tail_at (ep_rx.c) */
	uint64_t rx_tail_at, rx_direct_end; /* (holder) message offsets where such payloads end */
	uint32_t rx_full_reads;     /* (holder) reads that took all they asked for (diagnostics, tests) */
	uint32_t rx_reads;          /* (holder) reads that took octets (diagnostics, tests) */
	bool rx_in_whole;           /* (holder) an FPDU that came whole is being handled (on_whole) */
	bool rx_empty;              /* (holder) the last read of the socket came back short or empty */
	bool rx_took_short;         /* (holder) the stage holds what a short read took: read no more now */
	/*
	 * A blocking reader asleep in the socket's own receive (ep_qp_sleep_recv)
	 * holds the right to read without the token: nobody else reads the
	 * socket or touches the stage meanwhile (ep_rx_progress returns); an
	 * exec's snapshot refuses the QP then.  no_sleep_recv: the file turned
	 * out non-blocking.
	 */
	atomic_bool rx_sleeper;
	bool no_sleep_recv;         /* (holder) */
	/*
	 * ep_qp_sleep_input: the file made blocking, with an SO_RCVTIMEO of
	 * EP_SLEEP_INPUT_MS (every other read and write of the QP says
	 * MSG_DONTWAIT); the one thread that posted sends or waited so far
	 * (ep_qp_one_thread), and whether another ever did.
	 */
	atomic_bool fd_blocking;
	atomic_uintptr_t user_thread;
	atomic_bool threads_many;
	bool rx_wait;               /* esock_conn_param.wait_for_recv */
	atomic_bool want_room;      /* a writer found no room: EP_SEND_QUIET sends are heard again */
	bool buf_tuned;             /* (holder) ep_sockbuf_tune had its look (once data moved) */
	bool buf_bound;             /* (holder) buf_lowat is set */
	uint8_t buf_run;            /* (holder) messages in a row that ask for the other setting */
	uint8_t mss_checks;         /* (holder) MSS re-reads left while the window opens */
	uint8_t mss_skip;           /* (holder) then one re-read per 32 long messages */
	uint16_t mulpdu;
	struct esock_cq *scq, *rcq;
	/* (holder) received octets not yet fed to MPA (NULL when none: ep_spare.h) */
	uint8_t *stage;
	size_t stage_off, stage_len;

	struct ep_ring sqr;         /* send queue: posters produce, token holder consumes */
	struct ep_sqe *sq;          /* slots, by ep_ring_idx */
	uint32_t sq_tx, sq_done;    /* token holder: next to send, next to complete */
	struct ep_ring rqr;
	struct ep_rqe *rq;
	uint32_t rq_next, rq_done;  /* token holder: next to fill, next to complete */
	uint32_t msn_tx[3];         /* (holder) next MSN to send on QN 0, 1, 2 */
	uint32_t msn_rx[3];         /* (holder) next MSN expected on QN 0, 1, 2 */
	uint32_t mo_rx;             /* (holder) next MO expected of the Send in progress (in-order LLP) */
	uint32_t tx_pos;            /* (holder) MPA stream position of the next FPDU (markers) */
	uint32_t buf_moved;         /* (holder) octets read and written until buf_tuned */
	uint32_t buf_lowat;         /* (holder) the unsent bound for large messages (0: none; ep_sockbuf.c) */
	const struct ep_profile *prof;
	struct ep_txwork *txw;      /* (holder) while transmitting (ep_txwork_get), else NULL */
	/*
	 * ep_qp_recv_now: Sends go straight into the caller's buffer instead
	 * of a posted receive, in order, while |on|: a message that came whole,
	 * or one of many FPDUs when the buffer has room for the posted receive
	 * it would have taken.  One still |open| when the call ends is moved to
	 * that receive (lent_back), so the caller only ever gets whole messages.
	 */
	struct {
		uint8_t *buf;
		size_t room, promised, filled;
		uint32_t msgs;
		uint32_t open_msn;          /* the message |open| in the buffer, from octet |filled| */
		bool one, on, open;
		bool pooled;                /* a message of the call's completed in a posted receive */
		bool in_call;               /* an ep_qp_recv_now call is reading (ep_rx.c leave_for_next) */
		bool stay;                  /* EP_NOW_STAY: whole FPDUs may stay in the stage for the next call */
	} rxt;
	size_t term_len;            /* (holder) octets of termbuf */
	uint32_t orq_n, irq_n;      /* (holder) Reads in flight (orq), the peer's being answered (irq) */

	/* Token holder only from here on (info's first line is read per message too). */
	struct esock_conn_info info;
	bool info_valid;            /* an MPA exchange filled info (a reject too) */
	bool addrs_known;           /* info.local and info.remote are in (ep_qp_addrs) */
	struct esock_mpa_rx rx;
	struct esock_ddp_place place;
	struct ep_tx_cur txc;
	struct ep_rx_cur rxc;
	uint8_t termbuf[96];
	uint64_t resp_got;          /* octets of the oldest Read's Response so far */
	/* Sized by the negotiated ORD and IRD at ep_qp_start (ep_qp_reads_init). */
	uint32_t *orq;              /* SQ indices of Reads in flight, oldest first */
	uint32_t orq_cap, orq_head;
	struct ep_irqe *irq;        /* the peer's Reads being answered */
	uint32_t irq_cap, irq_head;
	int64_t hold_until;         /* tx_hold: at most until then (ep_now_ms), then fail */
	bool rtr_read_out;          /* our zero-length Read RTR awaits its response */
	struct esock_qp_error err;
	bool has_err;
	/*
	 * A FIN between FPDUs, with no Read outstanding, ends only the receive
	 * direction (receives are flushed, sends go on): TCP half-close, for
	 * esock's socket layer towards its own kind.  Else a FIN ends the QP.
	 */
	bool half_close;
	/*
	 * Our own half-close (ep_qp_close_send): the FIN goes once everything
	 * queued is out, the send WRs and the rest of a message TCP did not
	 * take whole (ep_tx_progress); fin_sent once it went.
	 */
	atomic_bool fin_wanted, fin_sent;
	struct ep_connecting *connecting; /* initiator's MPA exchange in progress (ep_conn.c) */

	/* Set up at creation, and the engine's (ep_engine.c): not the token holder's. */
	uint32_t num;
	struct esock_pd *pd;
	bool sig_all;
	uint32_t max_sge, max_recv_sge;
	uint32_t sq_stride, rq_stride; /* octets per slot (struct ep_sqe / ep_rqe) */
	/*
	 * |fd| is the application's own descriptor (the socket layer: one
	 * descriptor per connection): the QP never closes it, and moves to a
	 * private copy when the application closes it but keeps a dup
	 * (ep_engine_move).
	 */
	bool fd_borrowed;
	bool fd_of_sock;            /* the socket layer gave the QP its file (ep_qp_set_fd) */
	bool fd_own;                /* the endpoint made the file (not esock_qp_connect_fd's, ...) */
	/*
	 * The owner's SO_LINGER {1, 0} (its destruction resets the connection)
	 * as the socket layer knows it (linger_known), else asked of the kernel.
	 */
	bool linger_known, linger_abort;
	int (*rq_refill)(void *arg); /* posts a receive as a Send finds none (ep_sock.h) */
	void *rq_refill_arg;
	atomic_int refs;            /* engine references */
	atomic_bool in_engine;      /* the engine's to watch (ep_engine_add) */
	/*
	 * In the engine's epoll set (under eng_lock).  A lazy QP is only while
	 * the engine has something to watch (the hold's first FPDU, room to
	 * send): its callers read it and see its hang-up themselves, so its
	 * connection costs the engine no system call and no wake-up.
	 */
	bool eng_reg;
	/*
	 * A thread waiting on a CQ of this QP reads its socket itself; the engine
	 * then stops watching it for input (detached), so one message never
	 * wakes two threads.  The engine takes it back once nobody has waited for
	 * EP_REATTACH_MS (esock_cq_wait, ep_engine.c).
	 */
	atomic_int attended;        /* threads inside esock_cq_wait for this QP */
	atomic_bool detached;       /* engine not watching input */
	_Atomic int64_t left_ms;    /* when the last waiter left */
	pthread_mutex_t eng_lock;   /* orders epoll_ctl calls on this QP */
};

/* ep_qp.c */
/* ep_engine.c: |qp| corked its RTR; every corked RTR of the process goes (a thread sleeps). */
void ep_cork_note(struct esock_qp *qp);
/* In a forked child's thread: the quiesces its parent thread held are gone. */
void ep_qp_fork_child_thread(void);
void ep_qp_fail(struct esock_qp *qp, const struct esock_term *t, bool send_term, int err,
		enum esock_wc_status first_status);
void ep_qp_complete_sq(struct esock_qp *qp);
void ep_qp_flush(struct esock_qp *qp);
void ep_qp_flush_rq(struct esock_qp *qp);
/* Goes to RTS on |fd| (ep_start.c); qp->info (addresses included) is complete. */
int ep_qp_start(struct esock_qp *qp, int fd, bool initiator);
/* The receiver for qp->info's CRC and markers (ep_rx.c).  0 or -errno. */
int ep_rx_init(struct esock_qp *qp);

/* The Read queues for qp->info's IRD and ORD.  0 or -ENOMEM. */
int ep_qp_reads_init(struct esock_qp *qp);
void ep_qp_update_mulpdu(struct esock_qp *qp);

/*
 * A blocking reader sleeps in the socket's own receive (ep_cq.c cq_wait,
 * EP_NOW_SLEEP): the read that brings the message is the one that waited
 * for it, as TCP's blocking read (poll() and then a read are two system
 * calls and a wait queue more per message).  It takes the right to read
 * (qp->rx_sleeper) under the token, lets the token go (senders go on), and
 * reads into the stage; back with the token it feeds what came, whole Sends
 * straight into |buf| (as ep_qp_recv_now).  -EAGAIN: it cannot sleep now
 * (the token is taken, octets or completions wait, the QP is held, paused,
 * ending, restricted or non-blocking): poll instead.  Else octets placed in
 * |buf| (0: what came went elsewhere, or an end), -ETIMEDOUT when the read
 * gave up (an SO_RCVTIMEO set meanwhile), -EINTR.
 */
ssize_t ep_qp_sleep_recv(struct esock_qp *qp, void *buf, size_t len, unsigned flags, uint32_t *msgs);
/*
 * The endpoint API's twin (esock_cq_wait with one QP on the CQ, no reader's
 * buffer): sleeps in the socket's receive when only input can complete
 * something on |cq| (ep_qp.c), feeds what came (completions then wait on
 * |cq|).  -EAGAIN: it cannot now (poll instead); -EINTR; else 0, also when
 * the sleep ended after EP_SLEEP_INPUT_MS with nothing.
 */
int ep_qp_sleep_input(struct esock_qp *qp, const struct esock_cq *cq);
/* Whether only the calling thread posted on and waited for |qp| so far (it is marked so). */
bool ep_qp_one_thread(struct esock_qp *qp);
/* Restricted mode: the QPs' files blocking for ep_qp_sleep_input are non-blocking again. */
void ep_qp_nonblocking(struct esock_qp *qp);

/* ep_tx.c / ep_rx.c (token holder) */
void ep_tx_progress(struct esock_qp *qp);
/* ep_qp_send_now's work, the token held. */
int ep_tx_send_now(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len);
void ep_rx_progress(struct esock_qp *qp, bool drain);
/* ep_qp_recv_now's end: a message still open in the caller's buffer moves to a posted receive. */
void ep_rx_lend_back(struct esock_qp *qp);
/*
 * ep_qp_sleep_recv's read: ep_rx_sleep_stage (token held) gives the QP an
 * empty stage, false without one; ep_rx_sleep_read (the right to read held,
 * not the token) sleeps in the socket's receive into it; ep_rx_sleep_took
 * (token held again) accounts what came.  Octets read, 0 at EOF, -errno.
 */
bool ep_rx_sleep_stage(struct esock_qp *qp);
ssize_t ep_rx_sleep_read(struct esock_qp *qp, size_t *asked);
void ep_rx_sleep_took(struct esock_qp *qp, ssize_t n, size_t asked);
/* Queues a Terminate about segment |seg| for reason |t|; the QP then fails. */
void ep_tx_terminate(struct esock_qp *qp, const struct esock_term *t, const uint8_t *seg,
		     size_t len);

/* ep_sockbuf.c: bounds the socket buffers when the peer shares our CPU (once data moved). */
bool ep_sockbuf_same_host(const struct sockaddr_storage *local,
			  const struct sockaddr_storage *remote);
void ep_sockbuf_tune(struct esock_qp *qp);
void ep_sockbuf_flip(struct esock_qp *qp);
/*
 * A message of |len| octets starts (ep_tx.c): after EP_LOCAL_RUN large ones
 * in a row the unsent bound goes on, after as many small ones off.
 */
static inline void ep_sockbuf_msg(struct esock_qp *qp, uint64_t len)
{
	if (__builtin_expect(qp->buf_lowat != 0, 0)) {
		if ((len >= EP_LOCAL_LARGE) == qp->buf_bound)
			qp->buf_run = 0;
		else if (++qp->buf_run >= EP_LOCAL_RUN)
			ep_sockbuf_flip(qp);
	}
}
/* |n| more octets went through the socket: the look comes after EP_LOCAL_LOWAT_DEFAULT. */
static inline void ep_sockbuf_moved(struct esock_qp *qp, size_t n)
{
	if (__builtin_expect(!qp->buf_tuned, 0) &&
	    (qp->buf_moved += (uint32_t)(n < EP_LOCAL_LOWAT_DEFAULT ? n : EP_LOCAL_LOWAT_DEFAULT)) >=
		    EP_LOCAL_LOWAT_DEFAULT)
		ep_sockbuf_tune(qp);
}

/* ep_engine.c */
void ep_engine_stop(void);
ssize_t ep_restricted_read(int fd, void *buf, size_t len);
ssize_t ep_restricted_writev(int fd, const struct iovec *iov, int cnt);
/* Test seam: when set, called inside ep_engine_add after the epoll ADD (tests widen that window). */
extern void (*ep_engine_add_gap)(struct esock_qp *qp);
/* ep_conn.c: an active MPA exchange in progress goes on on |nfd|. */
void ep_conn_move_fd(struct esock_qp *qp, int nfd);
void ep_engine_want_out(struct esock_qp *qp, bool on);
/* The engine's epoll set watches the QP's input (its events may come before in_engine). */
bool ep_engine_reads(struct esock_qp *qp);
/* Stops the engine watching |qp|'s input while a waiter does (no-op when done). */
void ep_engine_detach(struct esock_qp *qp);
/* QP numbers: register / look up with a reference / drop the reference. */
int ep_qpn_alloc(struct esock_qp *qp);
void ep_qpn_free(struct esock_qp *qp);

/* ep_conn.c / ep_listen.c: the passive side's connection request. */
struct esock_conn_req {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	int fd;
	uint8_t frame[ESOCK_MPA_FRAME_MAX];
	size_t have;              /* octets of frame read so far */
	struct esock_mpa_frame req;
	struct sockaddr_storage local, remote;
	int64_t deadline;         /* ep_now_ms() by which the Request must be in */
	bool sniffing;            /* the listener hands out plain TCP: peeking, nothing read */
	bool plain;               /* a plain TCP connection (sniffing said so) */
	bool watched;             /* in the listener's epoll set */
	uint64_t seq;             /* the listener's count of accepted connections, this one's */
	uint64_t drops_at;        /* the listener's drops when it was accepted */
	bool lowest;              /* accepted in the call that hands it out: its number is the lowest free */
	/*
	 * esock_accept failing leaves |fd| open, the request freed (the socket
	 * layer: the descriptor is the application's, which closes it itself).
	 */
	bool keep_fd;
	bool own_fd;              /* the listener accepted it (not the caller's: esock_request_from_fd) */
};
/*
 * Reads what |fd| has towards one start frame (Request or Reply) into
 * buf[*have..] (ESOCK_MPA_FRAME_MAX octets) without blocking.  A Reply is
 * read without reading past it (FPDUs may follow at once); a |request| in
 * one read of all there is (nothing may follow it before our Reply: octets
 * after it are -EPROTO).  Returns 1 when the frame is whole, 0 when more
 * octets are needed, -EPROTO (not a start frame), -ECONNRESET (closed),
 * -EMSGSIZE, -errno.
 */
int ep_frame_read(int fd, uint8_t *buf, size_t *have, bool request);
/* The MPA timeout: $ESOCK_MPA_TIMEOUT_MS (-1: none), else 10 s. */
int ep_mpa_timeout_ms(void);
/* Abortive close: the peer sees a reset, as siw does for a bad start frame. */
void ep_close_reset(int fd);

/* ep_wait.c: the endpoint's clock in microseconds (ep_now_ms in ep_sock.h). */
int64_t ep_now_us(void);

/*
 * The user backend's side of esock/iwarp.h (ep_backend.c puts them in
 * its table, iwarp/backend.h; what each does is told there).
 */
int user_pd_alloc(struct esock_pd **pd);
int user_pd_free(struct esock_pd *pd);
int user_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access, uint8_t key,
		struct esock_mr **mr);
uint32_t user_mr_stag(const struct esock_mr *mr);
int user_mr_dereg(struct esock_mr *mr);
int user_mr_invalidate(struct esock_pd *pd, uint32_t stag);
int user_mr_rekey(struct esock_mr *mr, uint8_t key);
bool user_mr_valid(const struct esock_mr *mr);
int user_cq_create(int depth, struct esock_cq **cq);
int user_cq_destroy(struct esock_cq *cq);
int user_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc);
int user_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms);
int user_cq_fd(struct esock_cq *cq);
int user_cq_arm(struct esock_cq *cq, bool solicited_only);
int user_qp_create(const struct esock_qp_attr *a, struct esock_qp **out);
int user_qp_destroy(struct esock_qp *qp);
enum esock_qp_state user_qp_state(const struct esock_qp *qp);
uint32_t user_qp_num(const struct esock_qp *qp);
int user_qp_connect(struct esock_qp *qp, const struct sockaddr *addr, socklen_t addrlen,
		const struct esock_conn_param *param);
int user_qp_connect_fd(struct esock_qp *qp, int fd, const struct esock_conn_param *param);
int user_qp_connect_start(struct esock_qp *qp, int fd, const struct esock_conn_param *param);
int user_qp_connect_continue(struct esock_qp *qp);
int user_qp_connect_wait_ms(const struct esock_qp *qp);
int user_qp_conn_info(const struct esock_qp *qp, struct esock_conn_info *info);
/* The connection's addresses into |i| (getsockname, getpeername), asked only when needed. */
void ep_sockaddrs(int fd, struct esock_conn_info *i);
/* ... into qp->info, once. */
void ep_qp_addrs(struct esock_qp *qp);
int user_qp_disconnect(struct esock_qp *qp);
int user_qp_last_error(const struct esock_qp *qp, struct esock_qp_error *e);
int user_post_send(struct esock_qp *qp, struct esock_send_wr *wr,
		struct esock_send_wr **bad_wr);
int user_post_recv(struct esock_qp *qp, struct esock_recv_wr *wr,
		struct esock_recv_wr **bad_wr);
int user_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
		struct esock_listener **out);
int user_listener_from_fd(int fd, struct esock_listener **out);
int user_listener_addr(const struct esock_listener *l, struct sockaddr_storage *ss);
int user_listener_fd(const struct esock_listener *l);
int user_listener_close(struct esock_listener *l);
int user_listener_configure(struct esock_listener *l, const struct esock_listen_param *p);
int user_listener_poll_fd(struct esock_listener *l);
int user_listener_ready(struct esock_listener *l);
int user_get_request(struct esock_listener *l, struct esock_conn_req **out, int timeout_ms);
int user_request_from_fd(int fd, struct esock_conn_req **out);
int user_conn_req_fd(const struct esock_conn_req *r);
int user_conn_req_take_plain(struct esock_conn_req *r);
int user_conn_req_info(const struct esock_conn_req *r, struct esock_conn_info *i);
int user_accept(struct esock_conn_req *r, struct esock_qp *qp,
		const struct esock_conn_param *param);
int user_reject(struct esock_conn_req *r, const void *pd, uint16_t pd_len);

#endif /* ESOCK_ENDPOINT_EP_H */
