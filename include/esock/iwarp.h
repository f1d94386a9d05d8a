/* SPDX-License-Identifier: MIT */
/*
 * The user-level iWARP endpoint ("verbs-lite"): protection domains, memory
 * registration with STags, completion queues, queue pairs over kernel TCP
 * with the MPA exchange (RFC 5044 / RFC 6581), and Send / Send with
 * Solicited Event / Send with Invalidate / RDMA Write / RDMA Read work
 * requests (RFC 5040).  The shapes follow libibverbs and librdmacm so that
 * RDMA programmers recognise them; addresses in work requests are virtual
 * addresses (tagged offsets are VA-based, as siw and rping use them).
 *
 * Threads: every call is thread-safe.  A process-wide progress engine thread
 * makes one-sided operations and Read Responses progress while the
 * application does nothing; the calling thread sends inline and drives
 * receive progress itself while it waits in esock_cq_wait().
 *
 * Errors: 0 (or a count) on success, a negative errno code on failure.
 */
#ifndef ESOCK_IWARP_H
#define ESOCK_IWARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <esock/export.h>
#include <esock/term.h>

#ifdef __cplusplus
extern "C" {
#endif

struct esock_pd;
struct esock_mr;
struct esock_cq;
struct esock_qp;
struct esock_listener;
struct esock_conn_req;

/* ==== Protection domains and memory registration ==== */

/* Allocates a protection domain.  Returns 0 or -ENOMEM. */
ESOCK_EXPORT int esock_pd_alloc(struct esock_pd **pd);

/* Frees |pd|.  Returns 0, or -EBUSY while MRs or QPs still use it. */
ESOCK_EXPORT int esock_pd_free(struct esock_pd *pd);

/* Access rights of a memory region (local read is always granted). */
enum esock_access {
	ESOCK_ACCESS_LOCAL_WRITE = 0x1,  /* receive buffers, RDMA Read sinks */
	ESOCK_ACCESS_REMOTE_WRITE = 0x2, /* target of a peer's RDMA Write (needs LOCAL_WRITE) */
	ESOCK_ACCESS_REMOTE_READ = 0x4,  /* source of a peer's RDMA Read */
};

/*
 * esock_mr_reg registers [addr, addr + len) (keeps: the memory must stay
 * valid until esock_mr_dereg) in |pd| with |access| (enum esock_access).
 * The STag is a 24-bit index and the consumer |key| byte (low 8 bits).
 * Returns 0, or -EINVAL (NULL address with a length, REMOTE_WRITE without
 * LOCAL_WRITE, unknown access bits), -ENOMEM.
 */
ESOCK_EXPORT int esock_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access,
			      uint8_t key, struct esock_mr **mr);

/* The region's STag (used as both lkey and rkey). */
ESOCK_EXPORT uint32_t esock_mr_stag(const struct esock_mr *mr);

/*
 * esock_mr_dereg removes |mr|: from now on the peer's accesses through its
 * STag fail with "invalid STag".  Returns 0.
 */
ESOCK_EXPORT int esock_mr_dereg(struct esock_mr *mr);

/*
 * esock_mr_invalidate invalidates the STag |stag| of |pd| locally (as a
 * Local Invalidate work request would); later accesses fail with "invalid
 * STag" until esock_mr_rekey validates it again.  Returns 0, or -ENOENT
 * (no such STag in |pd|), -EINVAL (already invalid).
 */
ESOCK_EXPORT int esock_mr_invalidate(struct esock_pd *pd, uint32_t stag);

/*
 * esock_mr_rekey gives |mr| the consumer key |key| and makes it valid again
 * (what a fast-register would do after an invalidation).  Returns 0.
 */
ESOCK_EXPORT int esock_mr_rekey(struct esock_mr *mr, uint8_t key);

/* True while |mr|'s STag is valid (not invalidated locally or remotely). */
ESOCK_EXPORT bool esock_mr_valid(const struct esock_mr *mr);

/* ==== Completion queues ==== */

enum esock_wc_status {
	ESOCK_WC_SUCCESS = 0,
	ESOCK_WC_LOC_LEN_ERR,    /* receive buffer too small, SGE beyond its MR */
	ESOCK_WC_LOC_PROT_ERR,   /* local key invalid or lacks the access right */
	ESOCK_WC_LOC_QP_OP_ERR,  /* work request malformed for this QP */
	ESOCK_WC_WR_FLUSH_ERR,   /* QP entered error before the request completed */
	ESOCK_WC_REM_ACCESS_ERR, /* the peer refused the remote access (Terminate) */
	ESOCK_WC_REM_OP_ERR,     /* the peer reported another error (Terminate) */
	ESOCK_WC_FATAL_ERR,      /* connection lost or local protocol error */
};

enum esock_wc_opcode {
	ESOCK_WC_SEND,
	ESOCK_WC_RDMA_WRITE,
	ESOCK_WC_RDMA_READ,
	ESOCK_WC_RECV,
};

#define ESOCK_WC_WITH_INV 0x1   /* a Send with Invalidate was received */
#define ESOCK_WC_SOLICITED 0x2  /* a Send with Solicited Event was received */

struct esock_wc {
	uint64_t wr_id;
	enum esock_wc_status status;
	enum esock_wc_opcode opcode;
	uint32_t byte_len;        /* receives: octets placed */
	uint32_t qp_num;
	unsigned flags;           /* ESOCK_WC_WITH_INV, ESOCK_WC_SOLICITED */
	uint32_t invalidated_stag; /* with ESOCK_WC_WITH_INV */
};

/* Creates a CQ holding up to |depth| completions.  Returns 0, -EINVAL, -ENOMEM. */
ESOCK_EXPORT int esock_cq_create(int depth, struct esock_cq **cq);

/* Destroys |cq|.  Returns 0, or -EBUSY while a QP uses it. */
ESOCK_EXPORT int esock_cq_destroy(struct esock_cq *cq);

/*
 * Takes up to |n| completions without blocking.  Returns how many (0..n), or
 * -EOVERFLOW once the CQ is empty after it had to drop a completion (it was
 * smaller than the work in flight: a fatal application error, as in verbs).
 */
ESOCK_EXPORT int esock_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc);

/*
 * esock_cq_wait takes up to |n| completions, waiting up to |timeout_ms|
 * (-1: forever) for the first one.  While it waits, the calling thread makes
 * the CQ's queue pairs progress itself.  Returns how many, 0 on timeout,
 * -EINTR when a signal interrupted the wait, or -EOVERFLOW (see esock_cq_poll).
 */
ESOCK_EXPORT int esock_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms);

/*
 * esock_cq_fd gives a descriptor that becomes readable after
 * esock_cq_arm() once a (solicited, when asked) completion arrives; use it
 * with poll/epoll, then esock_cq_poll().  Owned by the CQ; made at the first
 * call (a CQ nobody asks costs no descriptor).  -errno when it cannot be made.
 */
ESOCK_EXPORT int esock_cq_fd(struct esock_cq *cq);

/*
 * esock_cq_arm asks for one notification through esock_cq_fd(): at the
 * next completion, or (|solicited_only|) at the next receive of a Send with
 * Solicited Event or an error completion.  Clears a pending notification.
 * Returns 1 when completions are already queued (poll them first), else 0
 * (or -errno when the descriptor cannot be made).
 */
ESOCK_EXPORT int esock_cq_arm(struct esock_cq *cq, bool solicited_only);

/* ==== Queue pairs ==== */

enum esock_qp_state {
	ESOCK_QPS_IDLE,      /* created, not connected */
	ESOCK_QPS_CONNECTING,
	ESOCK_QPS_RTS,       /* connected: work requests move */
	ESOCK_QPS_CLOSING,   /* disconnect requested, flushing */
	ESOCK_QPS_ERROR,     /* terminal: work requests are flushed */
};

struct esock_qp_attr {
	struct esock_pd *pd;
	struct esock_cq *send_cq;
	struct esock_cq *recv_cq;
	uint32_t sq_depth;   /* outstanding send work requests (0: 128) */
	uint32_t rq_depth;   /* posted receives (0: 128) */
	uint32_t max_sge;    /* SGEs per work request (0: 4, at most 15) */
	bool sq_sig_all;     /* every send WR completes, signaled or not */
	uint32_t max_recv_sge; /* SGEs per receive (0: max_sge); slots are sized by these */
};

/* Creates an unconnected QP.  Returns 0, -EINVAL, -ENOMEM. */
ESOCK_EXPORT int esock_qp_create(const struct esock_qp_attr *attr, struct esock_qp **qp);

/*
 * esock_qp_destroy disconnects (abortively when still connected), flushes
 * and frees |qp|; flushed completions are not reported.  Returns 0.
 */
ESOCK_EXPORT int esock_qp_destroy(struct esock_qp *qp);

ESOCK_EXPORT enum esock_qp_state esock_qp_state(const struct esock_qp *qp);
ESOCK_EXPORT uint32_t esock_qp_num(const struct esock_qp *qp);

/* Connection parameters, for both sides.  Zeroed means the defaults. */
struct esock_conn_info;

struct esock_conn_param {
	const void *private_data;  /* borrowed during the call */
	uint16_t private_data_len; /* at most 512 - 4 (256 - 4 towards siw) */
	uint8_t mpa_rev;           /* 1 or 2 (0: 2; falls back to 1 when the peer does) */
	int8_t crc;                /* 0: profile default (on), 1 on, -1 off */
	bool markers;              /* ask the peer to send markers (we always accept them) */
	int8_t p2p;                /* 0: profile default, 1 ask for / allow an RTR, -1 no */
	uint16_t ird, ord;         /* inbound / outbound Read depth (0: 8 / 8) */
	int timeout_ms;            /* MPA exchange (0: 10000; -1 none) */
	const char *peer;          /* peer profile name (NULL: $ESOCK_PEER or "generic") */
	/*
	 * A Send that finds no receive posted waits for one (the QP stops
	 * reading TCP, so the peer's TCP window fills and its sends block)
	 * instead of ending the connection with a Terminate as RFC 5040 asks.
	 * Only towards peers that agreed to it (esock's socket layer).
	 */
	bool wait_for_recv;
	/*
	 * The peer's FIN between FPDUs ends receiving only (receives flush, the
	 * QP still sends), as after TCP's shutdown(SHUT_WR), instead of ending
	 * the connection.  Only towards peers that agreed to it (esock's socket
	 * layer).
	 */
	bool half_close;
	/*
	 * FPDUs of back-to-back messages may share TCP segments: messages of
	 * up to two FPDUs queued together (a list of WRs, Read Responses)
	 * leave with one sendmsg, one-FPDU ones with MSG_MORE while more work
	 * waits behind them, and TCP fills whole segments, as with its own
	 * small writes; larger messages start segments.  Otherwise each
	 * message starts a segment (RFC 5044 §4.5 alignment, which RNICs place
	 * best).  Only towards peers that agreed to it (peer_agrees; without
	 * that hook the caller vouches for its peer).  Every receiver of esock
	 * and Linux siw takes FPDUs anywhere.
	 */
	bool pack;
	/*
	 * Called once the peer's MPA frame is known (info->private_data) and
	 * before the QP receives anything, from inside esock_qp_connect,
	 * esock_qp_connect_fd or esock_accept: false withdraws wait_for_recv,
	 * half_close and pack for this connection.  An initiator learns only from the
	 * Reply whether its peer agrees; deciding later would race with the
	 * peer's first FPDUs (and FIN), which may be processed at once.
	 */
	bool (*peer_agrees)(void *arg, const struct esock_conn_info *info);
	void *peer_agrees_arg;
	/*
	 * Initiator asking for an RTR (p2p 1): a revision 1 peer, whose Reply
	 * cannot carry one, is accepted without RTR mode instead of refused
	 * (esock_conn_info.p2p tells; the caller should then send first).
	 */
	bool rtr_optional;
};

/* What was negotiated, and what the peer sent. */
struct esock_conn_info {
	uint8_t mpa_rev;
	bool enhanced;            /* RFC 6581 */
	bool crc;
	bool markers_tx, markers_rx;
	bool p2p;
	uint8_t rtr;              /* enum esock_mpa_rtr bit used, 0: none */
	uint16_t ird, ord;        /* ours after negotiation */
	uint16_t peer_ird, peer_ord;
	uint16_t mulpdu;          /* largest ULPDU we send */
	uint8_t private_data[512];
	uint16_t private_data_len;
	const char *peer;         /* profile in use */
	struct sockaddr_storage local, remote;
};

/*
 * esock_qp_connect connects |qp| actively: TCP connect to |addr|, then the
 * MPA Request / Reply exchange.  Blocks up to param->timeout_ms.  Returns 0
 * (QP in RTS), or -ECONNREFUSED (TCP refused, or MPA reject: the peer's
 * private data is then in esock_qp_conn_info), -ETIMEDOUT, -EPROTO (the
 * peer's answer cannot be honoured; a Terminate or reset was sent),
 * -EINVAL (QP not idle, bad parameters), -ECONNRESET, or a connect errno.
 */
ESOCK_EXPORT int esock_qp_connect(struct esock_qp *qp, const struct sockaddr *addr,
				  socklen_t addrlen, const struct esock_conn_param *param);

/*
 * esock_qp_connect_fd does the MPA exchange of esock_qp_connect over |fd|, a
 * TCP socket the caller has already connected (blocking or not: its flags
 * are left alone; the endpoint never blocks on it).  Takes |fd| on success.
 * On failure the caller still owns |fd|, but once MPA frames went over it the
 * stream cannot carry plain TCP data any more.  Same returns as
 * esock_qp_connect.  (For the socket layer, whose descriptors stay kernel
 * TCP sockets.)
 */
ESOCK_EXPORT int esock_qp_connect_fd(struct esock_qp *qp, int fd,
				     const struct esock_conn_param *param);

/*
 * The exchange of esock_qp_connect_fd without waiting, for callers with
 * their own event loop: esock_qp_connect_start sends the MPA Request over
 * the connected |fd| and returns 0 (QP CONNECTING) or an error of
 * esock_qp_connect_fd.  Then, whenever |fd| is readable or the time of
 * esock_qp_connect_wait_ms has passed, esock_qp_connect_continue returns 0
 * (QP in RTS; it took |fd|), -EINPROGRESS (the Reply is not whole yet), or
 * an error of esock_qp_connect_fd (QP idle again; -ETIMEDOUT once the
 * timeout passed).  esock_qp_connect_wait_ms: ms left until the timeout
 * (-1: none, or no exchange in progress).  A peer profile that wants a pause
 * between the Reply and our first FPDU (siw's: 200 ms) keeps the exchange
 * in progress for that long after the Reply; esock_qp_connect_wait_ms then
 * gives the time left of the pause, and |fd| is not read meanwhile.
 */
ESOCK_EXPORT int esock_qp_connect_start(struct esock_qp *qp, int fd,
					const struct esock_conn_param *param);
ESOCK_EXPORT int esock_qp_connect_continue(struct esock_qp *qp);
ESOCK_EXPORT int esock_qp_connect_wait_ms(const struct esock_qp *qp);

/* Copies what was negotiated.  Returns 0, or -ENOTCONN before any exchange. */
ESOCK_EXPORT int esock_qp_conn_info(const struct esock_qp *qp, struct esock_conn_info *info);

/*
 * esock_qp_disconnect closes gracefully: the send queue drains, then TCP is
 * shut down; outstanding receives and Reads are flushed.  Returns 0.
 */
ESOCK_EXPORT int esock_qp_disconnect(struct esock_qp *qp);

/* Why the QP entered error, when a Terminate was sent or received. */
struct esock_qp_error {
	bool sent;                /* we sent the Terminate (else the peer did) */
	struct esock_term term;
	/*
	 * Negative errno summary: -ESHUTDOWN the peer closed TCP between FPDUs
	 * (an orderly close), -ECONNABORTED it closed inside an FPDU (a message
	 * cut short), -ECONNRESET a reset or a Terminate received, -EPROTO ...
	 */
	int err;
};
ESOCK_EXPORT int esock_qp_last_error(const struct esock_qp *qp, struct esock_qp_error *e);

/*
 * Passive side: esock_listen binds and listens on |addr| (SO_REUSEADDR);
 * esock_listener_addr reports the bound address (port 0 picks one).
 *
 * A listener reads the MPA Requests of all its new connections at once,
 * without blocking on any of them: a connection that says nothing (or
 * half a Request) never delays the others, and is reset once its MPA
 * timeout passes.  Connections that do not start with a valid Request are
 * reset (as siw does) and logged, never handed out.  Requests wait, oldest
 * first, until esock_get_request takes them.
 */
ESOCK_EXPORT int esock_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
			      struct esock_listener **l);
/*
 * esock_listener_from_fd makes a listener over |fd|, a TCP socket the caller
 * has bound and made listen; esock_listener_close leaves |fd| open.
 * Returns 0, -EINVAL, -ENOMEM.
 */
ESOCK_EXPORT int esock_listener_from_fd(int fd, struct esock_listener **l);
ESOCK_EXPORT int esock_listener_addr(const struct esock_listener *l, struct sockaddr_storage *ss);
ESOCK_EXPORT int esock_listener_fd(const struct esock_listener *l);
/* Closes the listener (and its socket, unless made by esock_listener_from_fd); resets pending connections. */
ESOCK_EXPORT int esock_listener_close(struct esock_listener *l);

/* Settings of a listener; zeroed fields keep the defaults. */
struct esock_listen_param {
	/* How long a new connection may take to send its Request (0: $ESOCK_MPA_TIMEOUT_MS or 10 s). */
	int timeout_ms;
	/*
	 * > 0: also hand out connections that are plain TCP: their first octets
	 * are not an MPA Request, or they stay silent for sniff_ms (a client
	 * that waits for the server's greeting).  esock_conn_req_take_plain
	 * tells them apart.  0: such connections are reset.
	 */
	int sniff_ms;
	/* Connections whose Request is being read, at most (0: 4096); beyond it the oldest is reset. */
	int max_pending;
};
ESOCK_EXPORT int esock_listener_configure(struct esock_listener *l, const struct esock_listen_param *p);

/*
 * esock_listener_poll_fd gives a descriptor (owned by the listener) that is
 * readable when the listener has work: a new connection, octets of a
 * Request, a timeout.  Use it with poll/epoll, then call
 * esock_listener_ready or esock_get_request(.., 0).
 */
ESOCK_EXPORT int esock_listener_poll_fd(struct esock_listener *l);

/* Does the listener's work without waiting; returns how many requests are ready to take, or -errno. */
ESOCK_EXPORT int esock_listener_ready(struct esock_listener *l);

/*
 * esock_get_request takes the oldest connection whose MPA Request is in,
 * waiting up to |timeout_ms| (-1 forever, 0 not at all; a signal does not
 * end the wait).  Returns 0 with |*req| (inspect with esock_conn_req_info,
 * then esock_accept or esock_reject), -ETIMEDOUT, or an accept(2) error
 * such as -EMFILE (the connection stays in the backlog).
 */
ESOCK_EXPORT int esock_get_request(struct esock_listener *l, struct esock_conn_req **req,
				   int timeout_ms);

/*
 * esock_request_from_fd reads the MPA Request from |fd|, a TCP connection the
 * caller accepted itself (bounded by the MPA timeout).  Returns 0 with |*req|,
 * which takes |fd| (esock_accept / esock_reject close it or hand it to the
 * QP), or -EPROTO (no valid Request; the caller still owns |fd|), -ENOMEM.
 */
ESOCK_EXPORT int esock_request_from_fd(int fd, struct esock_conn_req **req);

/* The TCP socket of |req| (still owned by it). */
ESOCK_EXPORT int esock_conn_req_fd(const struct esock_conn_req *req);

/*
 * esock_conn_req_take_plain: when |req| is a plain TCP connection (see
 * esock_listen_param.sniff_ms), frees it and returns its socket, whose
 * octets are all still unread; else -EINVAL (an MPA Request).
 */
ESOCK_EXPORT int esock_conn_req_take_plain(struct esock_conn_req *req);

/* The decoded Request: revision, flags, IRD/ORD, private data, addresses. */
ESOCK_EXPORT int esock_conn_req_info(const struct esock_conn_req *req, struct esock_conn_info *info);

/*
 * esock_accept sends the MPA Reply and binds the connection to |qp| (takes
 * |req|).  Returns 0 (QP in RTS), or -ECONNREFUSED (the Request cannot be
 * honoured: a reject Reply was sent), -EINVAL, -ECONNRESET.
 */
ESOCK_EXPORT int esock_accept(struct esock_conn_req *req, struct esock_qp *qp,
			      const struct esock_conn_param *param);

/* esock_reject sends a reject Reply with |pd| and closes (takes |req|). */
ESOCK_EXPORT int esock_reject(struct esock_conn_req *req, const void *pd, uint16_t pd_len);

/* ==== Work requests ==== */

struct esock_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;  /* STag of an MR of the QP's PD covering the range */
};

enum esock_wr_opcode {
	ESOCK_WR_SEND,
	ESOCK_WR_SEND_SE,
	ESOCK_WR_SEND_INV,
	ESOCK_WR_SEND_SE_INV,
	ESOCK_WR_RDMA_WRITE,
	ESOCK_WR_RDMA_READ,
};

#define ESOCK_SEND_SIGNALED 0x1
#define ESOCK_SEND_FENCE 0x2 /* wait for earlier RDMA Reads to complete */

struct esock_send_wr {
	uint64_t wr_id;
	struct esock_send_wr *next;
	struct esock_sge *sg_list;  /* borrowed; data must stay until completion */
	int num_sge;
	enum esock_wr_opcode opcode;
	unsigned send_flags;
	uint32_t invalidate_stag;   /* SEND_INV, SEND_SE_INV: the peer's STag */
	uint64_t remote_addr;       /* RDMA_WRITE / RDMA_READ: tagged offset */
	uint32_t rkey;              /* RDMA_WRITE / RDMA_READ: the peer's STag */
};

struct esock_recv_wr {
	uint64_t wr_id;
	struct esock_recv_wr *next;
	struct esock_sge *sg_list;
	int num_sge;
};

/*
 * esock_post_send queues the list |wr| in order; on failure *bad_wr names
 * the first request not queued.  Returns 0, or -ENOMEM (send queue full),
 * -EINVAL (too many SGEs, unknown opcode, Read with several SGEs), -EACCES
 * (an lkey is invalid, of another PD, or does not cover its SGE; a Read sink
 * without LOCAL_WRITE), -EMSGSIZE (more than 2^32 - 1 octets), -ENOTCONN
 * (QP not connected; in error, requests are accepted and flushed).
 */
ESOCK_EXPORT int esock_post_send(struct esock_qp *qp, struct esock_send_wr *wr,
				 struct esock_send_wr **bad_wr);

/* As esock_post_send for receive buffers (SGEs need LOCAL_WRITE). */
ESOCK_EXPORT int esock_post_recv(struct esock_qp *qp, struct esock_recv_wr *wr,
				 struct esock_recv_wr **bad_wr);

/* Names for logs: "success", "flush error", ... */
ESOCK_EXPORT const char *esock_wc_status_str(enum esock_wc_status st);

/*
 * The backend that carries |qp| or |l|: "user" (the user-level endpoint
 * over kernel TCP) or "verbs" (rdma-core: kernel siw or an RNIC); NULL for
 * NULL.  New PDs, CQs and listeners get $ESOCK_BACKEND (user, verbs, auto;
 * default auto), a QP its PD's; a PD, its MRs and a QP's CQs are of one
 * backend (-EINVAL otherwise).  A backend asked for but not built in: the
 * creating call fails with -ENODEV.
 */
ESOCK_EXPORT const char *esock_qp_backend(const struct esock_qp *qp);
ESOCK_EXPORT const char *esock_listener_backend(const struct esock_listener *l);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_IWARP_H */
