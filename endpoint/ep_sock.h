/* SPDX-License-Identifier: MIT */
/*
 * What the socket layer (libesock/) asks of the user-level endpoint beyond
 * esock/iwarp.h: a QP's descriptor and readiness, driving it from the
 * caller's thread, holding and handing it over across fork and exec, the
 * engine's interest in it, and the settings a socket brings (packing,
 * corking, linger).  The socket layer includes this and never endpoint/ep.h,
 * so the endpoint's structures stay its own.
 */
#ifndef ESOCK_ENDPOINT_EP_SOCK_H
#define ESOCK_ENDPOINT_EP_SOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <esock/ddp.h>
#include <esock/iwarp.h>

#define EP_STAGE_LEN (65536 + 512) /* a read of the stage and a partial header before it */

/*
 * An internal send flag (never the application's: esock_post_send keeps it
 * for the socket layer's own sends): a successful completion wakes only a
 * thread asleep in esock_cq_wait, not the CQ's descriptor or watchers,
 * unless the QP wants room (ep_qp_want_room).  An echo server's epoll_wait
 * then wakes for messages, not for the completions of its own writes.
 */
#define EP_SEND_QUIET 0x80000000u
/*
 * Another of the socket layer's own send flags: its SGEs are the process's
 * memory it sends from (a caller's buffer, a send slot), local access only,
 * so no key is looked up for them (a table slot per connection: a cache
 * miss per message over many connections).
 */
#define EP_SEND_LOCAL 0x40000000u

/* What a progress call is asked to do. */
enum {
	EP_WANT_RX = 0x1,
	EP_WANT_TX = 0x2,
	EP_WANT_FLUSH = 0x4,
	EP_WANT_DRAIN = 0x8, /* with RX: read until EAGAIN (edge-triggered callers) */
	EP_WANT_ENGINE = 0x10, /* the engine asks: void once it let go of the QP (ep_engine_del) */
};

/*
 * A DDPMODE socket's PD, CQ and listener: the user-level backend's whatever
 * $ESOCK_BACKEND says for the extended API, since the socket runs over its
 * own kernel TCP connection.  0 or -errno, as esock_pd_alloc and friends.
 */
int ep_sock_pd_alloc(struct esock_pd **pd);
int ep_sock_cq_create(int depth, struct esock_cq **cq);
int ep_sock_listener_from_fd(int fd, struct esock_listener **l);

/* ---- a QP's socket and state ---- */

/* The QP's TCP descriptor, or -1 (none, or forgotten: ep_qp_set_fd). */
int ep_qp_fd(const struct esock_qp *qp);
/*
 * Makes the QP run on |fd| (-1: forget it, so that destroying the QP does
 * not touch a socket it no longer owns); |borrowed|: the descriptor is the
 * application's (the QP does not close it).
 */
void ep_qp_set_fd(struct esock_qp *qp, int fd, bool borrowed);
bool ep_qp_fd_borrowed(const struct esock_qp *qp);
/*
 * Its input is read by its callers, not by the engine (ep.h, "lazy"); set
 * before the QP starts, or followed by ep_engine_refresh.
 */
bool ep_qp_lazy(const struct esock_qp *qp);
void ep_qp_set_lazy(struct esock_qp *qp, bool lazy);
/* The peer's FIN came (half-close towards an esock peer). */
bool ep_qp_rx_eof(const struct esock_qp *qp);
/* Its input ended: the peer's FIN came, or the QP failed (no more receives complete). */
bool ep_qp_input_ended(const struct esock_qp *qp);
/* A Send waits for a receive to be posted (the QP stopped reading). */
bool ep_qp_rx_paused(const struct esock_qp *qp);
/* Restricted mode: the QP waits for room to write (poll its socket for POLLOUT). */
bool ep_qp_pollout(const struct esock_qp *qp);
/* A writer found no room: EP_SEND_QUIET completions are heard again. */
bool ep_qp_want_room(const struct esock_qp *qp);
void ep_qp_set_want_room(struct esock_qp *qp, bool on);
/* The negotiated connection (local and remote addresses, MPA parameters). */
const struct esock_conn_info *ep_qp_info(const struct esock_qp *qp);
/*
 * A socket's settings, before the QP starts: |cork| the initiator's RTR
 * until the first message or wait; and whether a close aborts (SO_LINGER
 * {1, 0}).  (Packing FPDUs is esock_conn_param.pack.)
 */
void ep_qp_set_rtr_cork(struct esock_qp *qp, bool cork);
void ep_qp_set_linger(struct esock_qp *qp, bool abort);
/*
 * TCP's half-close towards an esock peer (esock_conn_param.half_close): our
 * FIN follows everything queued (send WRs, the rest of a message sent now
 * that TCP did not take whole), sent by whichever thread moves the last of
 * it; the call does not wait, as TCP's shutdown does not.  Nothing may be
 * posted after it.  ep_qp_send_pending: a message's rest or the FIN still
 * waits for room (send WRs not complete are the caller's own count).
 */
void ep_qp_close_send(struct esock_qp *qp);
bool ep_qp_send_pending(const struct esock_qp *qp);
/*
 * Towards a packing peer, pack only messages of one FPDU; a larger one starts
 * a segment (ep_tx.c, joinable).  A socket's stream is cut into 64 KiB
 * messages of two FPDUs, and its reader hands a message to the caller's
 * buffer only from a whole FPDU: one that straddles segments makes it wait
 * for the next segment first (1 MiB socket writes 0.98x TCP aligned, 0.81x
 * packed on one CPU; 0.85x and 0.58x across two, 2026-11-27).
 */
void ep_qp_set_pack_one(struct esock_qp *qp, bool one);
/*
 * A peer that cannot stop reading (a kernel QP: a Send that finds no receive
 * posted is a Terminate) keeps |depth| receives posted and RDMA-Writes the
 * number it has posted again, 8 octets big-endian, to the QP's credit word:
 * STag EP_CREDIT_STAG, tagged offset 0 (the QP's own, never a region of the
 * PD: it goes with the QP through fork and exec).  Sends then start only
 * within that window, one receive kept spare; the others wait in the send
 * queue as for a full TCP buffer and go when such a Write comes.  Before the
 * first Send; the STag takes Writes only from then on.
 */
#define EP_CREDIT_STAG 0xc7u /* (index 0, never a registration's: ep_mr.c) */
void ep_qp_set_credits(struct esock_qp *qp, uint32_t depth);
/*
 * Receives posted as Sends arrive: when a Send finds none posted, the QP
 * calls |refill|(|arg|) from whichever thread reads it, which may post one
 * (esock_post_recv) and returns 1 if it did, 0 if none is to be had (the
 * message then waits, or is a peer error, as without the hook).  It must
 * take no lock a caller of the QP's progress may hold (a leaf lock only).
 */
void ep_qp_set_rq_refill(struct esock_qp *qp, int (*refill)(void *arg), void *arg);
/*
 * One receive into |len| octets at |addr|, memory the socket layer owns
 * (its pool): no key to look up, which esock_post_recv would do for every
 * buffer (a table slot per connection: a cache miss per message over many).
 */
int ep_qp_post_recv_local(struct esock_qp *qp, void *addr, uint32_t len, uint64_t wr_id);
/* An initiator that has the Reply and waits before its first FPDU (a peer profile's delay). */
bool ep_connect_settling(const struct esock_qp *qp);

/* ---- driving it ---- */

/*
 * Sends |len| octets of |iov| as one Send now, in this call, when nothing
 * else waits to go out on the QP and its progress token is free: no send
 * WR, no completion, the caller's memory free on return (what TCP did not
 * take is copied).  0 when sent, -EAGAIN when it cannot go this way (post
 * a WR instead), -EPIPE when the connection failed.  Up to EP_SEND_NOW_MAX
 * octets always; up to EP_SEND_NOW_BIG when its FPDUs fit one batch (the
 * rest TCP did not take then goes to a spill block: ep_batch_own).
 */
#define EP_SEND_NOW_MAX 8192
#define EP_SEND_NOW_BIG 65536
/* At most this many pieces (iovec entries) in a message sent now. */
#define EP_SEND_NOW_PIECES 15
int ep_qp_send_now(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len);
/*
 * Reads the QP's input now, in this call: whole Sends that arrived go
 * straight into |buf| (|len| octets), in order, without a posted receive
 * or a completion, until one does not fit (it and those behind it go to
 * posted receives, as always).  Octets placed in |buf| (*msgs messages),
 * or -EAGAIN when it cannot look now: the token is taken, the QP is not
 * running, or completions wait in its receive CQ (they are older: take
 * them first).  |flags|:
 *  EP_NOW_ONE     one message at most (message mode);
 *  EP_NOW_WAIT    a token holder at work is waited out (briefly; never a
 *                 quiesce), for a read that was promised input (epoll left
 *                 it in the socket: sock_rx_defer);
 *  EP_NOW_FINISH  the caller would wait anyway (a blocking reader): a
 *                 message of several FPDUs caught half arrived is waited
 *                 for while its writer sends the rest (ep_spin's bounds),
 *                 so that it ends in |buf| rather than in a posted receive.
 */
#define EP_NOW_ONE 0x1u
#define EP_NOW_WAIT 0x2u
#define EP_NOW_FINISH 0x4u
/*
 * EP_NOW_SLEEP (ep_cq_wait_recv): the reader may sleep in the socket's own
 * receive (ep.h ep_qp_sleep_recv) until input comes or the connection ends,
 * whatever the wait's timeout: the caller vouches that the file is blocking
 * and has no SO_RCVTIMEO (so a signal interrupts or restarts it as it would
 * a TCP read), and that only this process drives the connection (its
 * destruction shuts the socket down, which wakes the sleeper).
 */
#define EP_NOW_SLEEP 0x8u
/*
 * EP_NOW_STAY: whole Sends that no longer fit |buf| may stay in the QP's
 * stage, unfed, for the caller's next call, instead of going to posted
 * receives (a pool buffer, a completion and a copy more each): the caller
 * vouches that it looks at ep_qp_rx_staged before it waits or reports
 * readiness (nothing in the kernel's socket says they are there).
 */
#define EP_NOW_STAY 0x10u
ssize_t ep_qp_recv_now(struct esock_qp *qp, void *buf, size_t len, unsigned flags, uint32_t *msgs);
/*
 * Nothing of the QP's input is read yet: no octets held, no message half
 * placed, no completion waiting, the QP running and reading (markers off).
 * What its socket holds then is for ep_qp_recv_now to read, whole.  False
 * also when the token is taken (it cannot tell).
 */
bool ep_qp_rx_untouched(struct esock_qp *qp);
/*
 * The QP's last read of its socket came back short (the kernel's queue was
 * empty then), it holds nothing of a message, and no completion waits: true
 * once (the next call asks the kernel again).  False also when the token is
 * taken.
 */
bool ep_qp_rx_seen_empty(struct esock_qp *qp);
/* A call with EP_NOW_STAY left whole messages in the QP's stage (read without the token). */
bool ep_qp_rx_staged(const struct esock_qp *qp);

/* Asks for the QP's cache lines that a message's read or write visits, all at once. */
void ep_qp_prefetch(const struct esock_qp *qp);

void ep_qp_progress(struct esock_qp *qp, unsigned want);
/*
 * Serves wishes left for the token holder while nobody held it any more
 * (a fork's quiesce): every call on a connection does, so that a send
 * posted during a fork leaves (seen: a connect that finished during one
 * left its RTR unsent, and the peer waited for it for good).
 */
void ep_qp_serve(struct esock_qp *qp);
/* A corked RTR (ep_qp_set_rtr_cork) goes now: the application waits for input. */
void ep_qp_uncork(struct esock_qp *qp);
/* Every corked RTR of the process goes (a thread is about to sleep). */
extern atomic_int ep_ncorked;
void ep_uncork_all_slow(void);
static inline void ep_uncork_all(void)
{
	if (atomic_load_explicit(&ep_ncorked, memory_order_relaxed))
		ep_uncork_all_slow();
}
/*
 * One round of a waiter's spin before it sleeps (ep_wait.c): yields the CPU
 * (on one CPU the peer runs and answers; across CPUs the answer is caught
 * without a wake-up).  |*spin_end| starts at 0.  False once the spin is
 * over: |window_us| passed, or a yield lost the CPU to a busy thread for
 * a whole slice (then this thread does not spin for a second).  ep_spin
 * spins for a new CQ's window (a wait that no CQ learns for).
 */
bool ep_spin_for(int64_t *spin_end, int window_us);
bool ep_spin(int64_t *spin_end);
/*
 * What the look after a spin round found (|n| receive completions of fewer
 * than EP_SPIN_SMALL octets): a yield that took a whole slice was lost
 * unless it brought a batch of small messages (the peer on this CPU wrote
 * them meanwhile).  A caller that does not tell counts as finding none.
 */
#define EP_SPIN_SMALL (32 * 1024)
#define EP_SPIN_PAID 4 /* a long yield that brought this many (or a whole large message) paid */
void ep_spin_found(int n);
/* Time for timeouts (ms since an arbitrary start). */
int64_t ep_now_ms(void);

/* ---- fork and exec ---- */

/*
 * fork(): takes the QP's progress token (waits for its holder, whose work
 * never blocks), so that the child's copy is not caught half-way through a
 * receive or send; released in both processes after the fork.  Wishes left
 * meanwhile stay for the next progress call.
 */
void ep_qp_quiesce(struct esock_qp *qp);
/*
 * Lets go of the token.  Wishes left meanwhile wait for the next call on
 * the QP (ep_qp_serve): after a fork, only the process that goes on using
 * a connection may serve them (the other one's reads would take octets
 * that are not its own).
 */
void ep_qp_unquiesce(struct esock_qp *qp);
/* What a quiet QP in RTS must remember to go on in another image (ep_start.c). */
struct ep_qp_snap {
	struct esock_conn_info info; /* (info.peer: NULL here, the profile's name below) */
	char prof[16];
	uint32_t msn_tx[3], msn_rx[3];
	uint32_t next_msn[ESOCK_DDP_QN_MAX];
	int64_t hold_left_ms;        /* tx_hold: how long the first FPDU may still take */
	uint64_t fpdus;
	bool tx_hold, rtr_pending, rx_wait, half_close, tx_pack;
	uint64_t cr_word, cr_sent;   /* credits (ep_qp_set_credits; cr_limit 0: none) */
	uint32_t cr_limit;
	uint32_t stage_len;          /* octets read from TCP, not yet handled (at an FPDU start) */
};
/*
 * Those octets travel beside the record, only as many as there are (up to
 * EP_STAGE_LEN): ep_qp_snapshot copies them to |stage| (|cap| octets of
 * room, -ENOSPC if too few), ep_qp_resume takes them from there.
 */
int ep_qp_snapshot(struct esock_qp *qp, struct ep_qp_snap *sn, bool keep, uint8_t *stage, size_t cap);
int ep_qp_resume(struct esock_qp *qp, int fd, const struct ep_qp_snap *sn, const uint8_t *stage);

/* ---- the engine ---- */

int ep_engine_add(struct esock_qp *qp);
void ep_engine_del(struct esock_qp *qp);
/* True when QPs may leave their input to their callers (the engine does not busy-poll). */
bool ep_engine_lazy_ok(void);
/* The engine's interest in |qp| follows a change of its laziness or first-FPDU hold. */
void ep_engine_refresh(struct esock_qp *qp);
/*
 * Moves |qp| to descriptor |nfd| (a dup of its socket) while it runs: the
 * progress token is taken, the engine watches |nfd| instead; |drive|: then
 * serve what was wished meanwhile (not for a copy from fork that another
 * process may be using).  0 or -errno.
 */
int ep_engine_move(struct esock_qp *qp, int nfd, bool drive);
/*
 * Restricted system calls (a sandboxed process: the application installed a
 * seccomp filter, as sshd's pre-auth child does, or ESOCK_RESTRICTED=1):
 * from then on the process's connections use only read, write, poll and
 * shutdown on their sockets, as the application itself does: no engine
 * thread or epoll set is started, waits poll the sockets (no eventfd, no
 * spinning with sched_yield), input is read with read() after a poll that
 * says it is there, output written with write() piece by piece after a poll
 * that says there is room, and no socket option is looked at.  One-way:
 * a filter cannot be taken back.
 */
extern atomic_bool ep_restricted;
void ep_restrict(void);
/*
 * getsockopt for the library's own looks at a socket: -EPERM without a
 * system call once restricted (so a sandboxed process keeps its defaults),
 * else 0 or -errno.
 */
int ep_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
/* TCP_NODELAY on a connection's socket. */
void ep_tune_socket(int fd);

/* ---- completion queues ---- */

void ep_cq_kick(struct esock_cq *cq);
/* Adds / removes a watcher (|fn| runs under the CQ's lock: it must not take it). 0 or -ENOMEM. */
int ep_cq_watch(struct esock_cq *cq, void (*fn)(void *arg, int key), void *arg, int key);
void ep_cq_unwatch(struct esock_cq *cq, void *arg, int key);
/* Arms |cq| like esock_cq_arm without making it an eventfd; true when completions wait. */
bool ep_cq_arm(struct esock_cq *cq, bool solicited_only);
/* Armed: its next completion tells the watchers; disarm: it tells nobody until armed again. */
bool ep_cq_armed(const struct esock_cq *cq);
/*
 * A thread about to sleep in poll() on |cq|'s descriptor: every completion
 * kicks it until ep_cq_poll_end (|fired|: its last poll saw the descriptor
 * readable).  True when completions wait (then do not sleep).
 */
bool ep_cq_poll_begin(struct esock_cq *cq, bool fired);
void ep_cq_poll_end(struct esock_cq *cq);
void ep_cq_disarm(struct esock_cq *cq);
/*
 * esock_cq_wait for a reader with a buffer: while it waits, the input of
 * |qp| (bound to |cq|, lazy) is read by ep_qp_recv_now into |buf| (|len|
 * octets; |flags|: EP_NOW_ONE, EP_NOW_SLEEP), so that a Send arriving meanwhile
 * lands in the reader's memory rather than in a posted receive.  Returns
 * completions as esock_cq_wait does; what went into |buf| is in *placed
 * (octets) and *msgs, and ends the wait as a completion would.
 */
int ep_cq_wait_recv(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms,
		    struct esock_qp *qp, void *buf, size_t len, unsigned flags, size_t *placed,
		    uint32_t *msgs);
/* Completions waiting to be polled, and how many it holds at most. */
uint32_t ep_cq_count(const struct esock_cq *cq);
/* Nothing to poll: no completion waits and none was lost (esock_cq_poll would return 0). */
bool ep_cq_quiet(const struct esock_cq *cq);
uint32_t ep_cq_size(const struct esock_cq *cq);

/* ---- listeners ---- */

/* Requests a listener made ready so far (edge-triggered readiness). */
uint64_t ep_listener_completed(const struct esock_listener *l);
/* Connections the listener has ready to hand out (no system call). */
size_t ep_listener_pending(struct esock_listener *l);
/*
 * Moves the request's connection to the lowest free descriptor (accept's
 * rule: the listener accepted it earlier, when lower ones may have been in
 * use).  Returns that descriptor (the request keeps it) or -errno.
 */
int ep_conn_req_lowest_fd(struct esock_conn_req *r);
/* The request's descriptor outlives a failed accept (the caller still has it). */
void ep_conn_req_keep_fd(struct esock_conn_req *r);
/* The Request's private data (no addresses asked, unlike esock_conn_req_info). */
const uint8_t *ep_conn_req_private_data(const struct esock_conn_req *r, size_t *len);

#endif /* ESOCK_ENDPOINT_EP_SOCK_H */
