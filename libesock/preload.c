/* SPDX-License-Identifier: MIT */
/*
 * The interposer: libc's socket and descriptor calls, overloaded.  Each
 * wrapper looks its descriptor up in the table (a bounds check and two
 * loads) and, for anything not in DDPMODE, tail-calls libc: no lock, no
 * allocation, errno untouched.  DDPMODE sockets go to the socket layer
 * (sock_*.c), whose -errno results become -1 + errno here.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <alloca.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libesock/fdtab.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "util/log.h"

#define API __attribute__((visibility("default")))

static inline long ret(long rc)
{
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

/* A descriptor number the kernel hands out anew must not keep an old entry. */
static inline void fresh(int fd)
{
	if (__builtin_expect(fd >= 0 && esock_fdtab_get(fd) != NULL, 0))
		sock_release_fd(fd);
}

/* ---- sandboxes ---- */

/*
 * A seccomp filter the application installs (sshd's pre-auth child: read,
 * write, poll and little else) also binds the library: from here on its
 * connections use only such calls (ep.h, restricted system calls).
 * (Filters installed with the raw seccomp(2) system call are not seen:
 * ESOCK_RESTRICTED=1 says so in advance.)
 */
API int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		ep_restrict();
	return REAL(prctl)(option, a[0], a[1], a[2], a[3]);
}

/* ---- signals: handlers behind a counting trampoline (sock_signal.c) ---- */

API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sock_sigaction(sig, act, old);
}

API __sighandler_t signal(int sig, __sighandler_t h)
{
	return sock_signal_adopt(sig, REAL(signal)(sig, h));
}

API __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
	return sock_signal_adopt(sig, REAL(sysv_signal)(sig, h));
}

API __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	return sock_signal_adopt(sig, REAL(__sysv_signal)(sig, h));
}

/* ---- setup ---- */

API int socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol), rc;

	fresh(fd);
	if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) &&
	    (rc = sock_born(fd, domain, type, protocol)) < 0) {
		REAL(close)(fd); /* (the offload mode cannot carry it: tcpserverd is not there) */
		errno = -rc;
		return -1;
	}
	return fd;
}

/* bind, getsockname, getpeername: the kernel's, but an offloaded socket's are tcpserverd's. */
API int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s || !s->off) {
		if (s)
			sock_put(s);
		return REAL(bind)(fd, addr, len);
	}
	rc = sock_off_bind(s, addr, len);
	sock_put(s);
	return (int)ret(rc);
}

static int off_name(int fd, bool peer, struct sockaddr *addr, socklen_t *len)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s || (!s->off && !s->verbs)) {
		if (s)
			sock_put(s);
		return peer ? REAL(getpeername)(fd, addr, len) : REAL(getsockname)(fd, addr, len);
	}
	rc = s->verbs ? sock_vb_name(s, peer, addr, len) : sock_off_name(s, peer, addr, len);
	sock_put(s);
	return (int)ret(rc);
}

API int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return off_name(fd, false, addr, len);
}

API int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return off_name(fd, true, addr, len);
}

/* The peer's address for recvfrom and recvmsg (an offloaded socket's is tcpserverd's). */
static void peer_of(struct esock_sock *s, int fd, struct sockaddr *addr, socklen_t *len)
{
	if (s->off)
		(void)sock_off_name(s, true, addr, len);
	else if (s->verbs)
		(void)sock_vb_name(s, true, addr, len);
	else
		REAL(getpeername)(fd, addr, len);
}

API int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s) {
		if (!sock_auto_ddp(fd, addr, false))
			return REAL(connect)(fd, addr, len);
		if (!(s = sock_get(fd)))
			return REAL(connect)(fd, addr, len);
	}
	if (s->off) {
		rc = sock_off_connect(s, addr, len); /* (locks of its own) */
	} else {
		pthread_mutex_lock(&s->lock);
		rc = sock_connect(s, addr, len);
		pthread_mutex_unlock(&s->lock);
	}
	sock_put(s);
	return (int)ret(rc);
}

API int listen(int fd, int backlog)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s && (!sock_auto_ddp(fd, NULL, true) || !(s = sock_get(fd))))
		return REAL(listen)(fd, backlog);
	if (s->off) {
		rc = sock_off_listen(s, backlog);
	} else {
		pthread_mutex_lock(&s->lock);
		rc = sock_listen(s, backlog);
		pthread_mutex_unlock(&s->lock);
	}
	sock_put(s);
	return (int)ret(rc);
}

/* accept/accept4 on a DDPMODE socket (its reference is dropped here). */
static int accept_ddp(struct esock_sock *s, struct sockaddr *addr, socklen_t *len, int flags)
{
	/* The listener's lock is not held: accepting threads work in parallel. */
	long rc = s->off ? sock_off_accept(s, addr, len, flags)
		  : s->verbs ? sock_vb_accept(s, addr, len, flags)
		  : s->st == SOCK_LISTENING ? sock_accept(s, addr, len, flags) : -EINVAL;

	sock_put(s);
	return (int)ret(rc);
}

API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct esock_sock *s = sock_get(fd);

	if (!s) {
		int nfd = REAL(accept4)(fd, addr, len, flags);

		fresh(nfd);
		return nfd;
	}
	return accept_ddp(s, addr, len, flags);
}

API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct esock_sock *s = sock_get(fd);

	if (!s) {
		int nfd = REAL(accept)(fd, addr, len);

		fresh(nfd);
		return nfd;
	}
	return accept_ddp(s, addr, len, 0);
}

API int close(int fd)
{
	if (!esock_fdtab_get(fd)) {
		if (__builtin_expect(esock_fd_is_own(fd), 0)) {
			errno = EBADF; /* the library's: not open for the application */
			return -1;
		}
		return REAL(close)(fd);
	}
	return sock_close_fd(fd);
}

/*
 * closefrom and close_range close the application's descriptors in the
 * range, DDPMODE ones through close (or mark them close-on-exec), and pass
 * the library's own by (libc/ownfd.h): the spans between are one call each.
 */
static int close_span(unsigned first, unsigned last, int flags)
{
	int rc = 0, kept, mine = -2, sock = -2; /* (-2: not looked for yet; -1: none left) */
	bool own;

	if (flags & ~(CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)) {
		errno = EINVAL;
		return -1;
	}
	if ((flags & CLOSE_RANGE_UNSHARE) && REAL(close_range)(~0u, ~0u, CLOSE_RANGE_UNSHARE) < 0)
		return -1; /* (the table is this thread's own from here on) */
	flags &= ~CLOSE_RANGE_UNSHARE;
	while (first <= last) {
		if (mine != -1 && mine < (int)first)
			mine = esock_fd_next_own(first, last);
		if (sock != -1 && sock < (int)first)
			sock = esock_fdtab_next(first, last);
		own = mine >= 0 && (sock < 0 || mine < sock);
		kept = own ? mine : sock;
		unsigned end = kept < 0 ? last : (unsigned)kept - 1;

		if (kept != (int)first && REAL(close_range)(first, end, flags) < 0 && errno != ENOSYS)
			rc = -1;
		if (kept < 0 || (unsigned)kept == ~0u)
			break;
		if (!own) {
			if (flags & CLOSE_RANGE_CLOEXEC)
				fcntl(kept, F_SETFD, FD_CLOEXEC); /* (the wrapper: the wish is noted) */
			else
				sock_close_fd(kept);
		}
		first = (unsigned)kept + 1;
	}
	return rc;
}

API int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	return close_span(first, last, flags);
}

API void closefrom(int lowfd)
{
	int save = errno;

	(void)close_span(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u, 0);
	errno = save;
}

API int shutdown(int fd, int how)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s)
		return REAL(shutdown)(fd, how);
	rc = how < SHUT_RD || how > SHUT_RDWR ? -EINVAL : sock_shutdown(s, how);
	sock_put(s);
	return (int)ret(rc);
}

/* ---- data ---- */

static ssize_t ddp_recv(struct esock_sock *s, const struct iovec *iov, int n, int flags,
			int *mflags)
{
	ssize_t rc = sock_recv(s, iov, n, flags, mflags);

	sock_put(s);
	return ret(rc);
}

static ssize_t ddp_send(struct esock_sock *s, const struct iovec *iov, int n, int flags)
{
	ssize_t rc = sock_send(s, iov, n, flags);

	sock_put(s);
	return ret(rc);
}

API ssize_t read(int fd, void *buf, size_t len)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { buf, len };

	if (!s)
		return REAL(read)(fd, buf, len);
	return ddp_recv(s, &v, 1, 0, NULL);
}

API ssize_t write(int fd, const void *buf, size_t len)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { (void *)(uintptr_t)buf, len };

	if (!s)
		return REAL(write)(fd, buf, len);
	return ddp_send(s, &v, 1, 0);
}

API ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct esock_sock *s = sock_get(fd);

	if (!s)
		return REAL(readv)(fd, iov, n);
	if (n < 0 || n > IOV_MAX) {
		sock_put(s);
		return ret(-EINVAL);
	}
	return ddp_recv(s, iov, n, 0, NULL);
}

API ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct esock_sock *s = sock_get(fd);

	if (!s)
		return REAL(writev)(fd, iov, n);
	if (n < 0 || n > IOV_MAX) {
		sock_put(s);
		return ret(-EINVAL);
	}
	return ddp_send(s, iov, n, 0);
}

API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { buf, len };

	if (!s)
		return REAL(recv)(fd, buf, len, flags);
	return ddp_recv(s, &v, 1, flags, NULL);
}

API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { (void *)(uintptr_t)buf, len };

	if (!s)
		return REAL(send)(fd, buf, len, flags);
	return ddp_send(s, &v, 1, flags);
}

API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		     socklen_t *alen)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { buf, len };

	if (!s)
		return REAL(recvfrom)(fd, buf, len, flags, addr, alen);
	if (addr && alen) /* a connected stream socket: the peer's address */
		peer_of(s, fd, addr, alen);
	return ddp_recv(s, &v, 1, flags, NULL);
}

API ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
		   socklen_t alen)
{
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { (void *)(uintptr_t)buf, len };

	if (!s)
		return REAL(sendto)(fd, buf, len, flags, addr, alen);
	return ddp_send(s, &v, 1, flags); /* the address is ignored, as TCP does */
}

API ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	struct esock_sock *s = sock_get(fd);
	int mflags = 0;
	ssize_t rc;

	if (!s)
		return REAL(recvmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX) {
		sock_put(s);
		return ret(-EMSGSIZE);
	}
	rc = ddp_recv(s, m->msg_iov, (int)m->msg_iovlen, flags, &mflags);
	if (rc >= 0) {
		m->msg_flags = mflags;
		m->msg_controllen = 0;
		if (m->msg_name && m->msg_namelen)
			peer_of(s, fd, m->msg_name, &m->msg_namelen);
	}
	return rc;
}

API ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct esock_sock *s = sock_get(fd);

	if (!s)
		return REAL(sendmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX) {
		sock_put(s);
		return ret(-EMSGSIZE);
	}
	return ddp_send(s, m->msg_iov, (int)m->msg_iovlen, flags);
}

/*
 * sendfile to a DDPMODE socket: straight into the send slots; offloaded or
 * in message mode, read in pieces and sent as writes.
 */
static ssize_t ddp_sendfile(struct esock_sock *s, int in, off_t *off, size_t count)
{
	static const size_t piece = 65536;
	char *buf;
	size_t done = 0;
	ssize_t rc = 0;

	if (!s->off && !s->verbs && !s->o.msgmode) {
		rc = sock_sendfile(s, in, off, count);
		sock_put(s);
		return ret(rc);
	}
	if (!(buf = malloc(piece))) {
		sock_put(s);
		return ret(-ENOMEM);
	}
	while (done < count) {
		size_t want = count - done < piece ? count - done : piece;
		ssize_t n = off ? pread(in, buf, want, *off) : REAL(read)(in, buf, want);
		struct iovec v = { buf, 0 };

		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		v.iov_len = (size_t)n;
		if ((rc = sock_send(s, &v, 1, 0)) < 0)
			break;
		if (off)
			*off += rc;
		done += (size_t)rc;
		if (rc < n) { /* non-blocking socket full: give back the unsent tail */
			if (!off)
				lseek(in, (off_t)rc - n, SEEK_CUR);
			break;
		}
	}
	free(buf);
	sock_put(s);
	return done ? (ssize_t)done : ret(rc);
}

API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	struct esock_sock *s = sock_get(out);

	if (!s)
		return REAL(sendfile)(out, in, off, count);
	return ddp_sendfile(s, in, off, count);
}

API ssize_t sendfile64(int out, int in, off_t *off, size_t count)
{
	return sendfile(out, in, off, count);
}

/* sendmmsg: each message one send, in order; stops at the first that does not go whole. */
API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	struct esock_sock *s = sock_get(fd);
	unsigned int i;

	if (!s)
		return REAL(sendmmsg)(fd, v, n, flags);
	for (i = 0; i < n && i < UIO_MAXIOV; i++) {
		const struct msghdr *m = &v[i].msg_hdr;
		size_t want = 0;
		ssize_t rc;

		for (size_t k = 0; k < m->msg_iovlen && m->msg_iovlen <= IOV_MAX; k++)
			want += m->msg_iov[k].iov_len;
		rc = m->msg_iovlen > IOV_MAX ? -EMSGSIZE
					     : sock_send(s, m->msg_iov, (int)m->msg_iovlen, flags);
		if (rc < 0) {
			sock_put(s);
			return i ? (int)i : (int)ret(rc);
		}
		v[i].msg_len = (unsigned int)rc;
		if ((size_t)rc < want) {
			i++;
			break;
		}
	}
	sock_put(s);
	return (int)i;
}

/*
 * recvmmsg: each message one receive of the stream, in order (as TCP does);
 * MSG_WAITFORONE makes all but the first non-blocking.  The timeout is not
 * applied (a DDPMODE socket honours SO_RCVTIMEO instead).
 */
API int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *tmo)
{
	struct esock_sock *s = sock_get(fd);
	unsigned int i;

	if (!s)
		return REAL(recvmmsg)(fd, v, n, flags, tmo);
	for (i = 0; i < n && i < UIO_MAXIOV; i++) {
		struct msghdr *m = &v[i].msg_hdr;
		int f = flags & ~MSG_WAITFORONE, mf = 0;
		ssize_t rc;

		if (i && (flags & MSG_WAITFORONE))
			f |= MSG_DONTWAIT;
		rc = m->msg_iovlen > IOV_MAX ? -EMSGSIZE
					     : sock_recv(s, m->msg_iov, (int)m->msg_iovlen, f, &mf);
		if (rc < 0) {
			sock_put(s);
			return i ? (int)i : (int)ret(rc);
		}
		v[i].msg_len = (unsigned int)rc;
		m->msg_flags = mf;
		m->msg_controllen = 0;
		if (m->msg_name && m->msg_namelen)
			peer_of(s, fd, m->msg_name, &m->msg_namelen);
		if (rc == 0) { /* end of stream */
			i++;
			break;
		}
	}
	sock_put(s);
	return (int)i;
}

/*
 * splice with a DDPMODE socket on one side (the other is a pipe or a file):
 * the octets pass through a buffer here, the kernel cannot move them for
 * us (it would read or write the raw MPA stream).  From the socket: peek,
 * write what the other side takes, consume exactly that.  To the socket:
 * read, then send all of it (even on a non-blocking socket: it has left the
 * pipe already).
 */
static ssize_t ddp_splice(struct esock_sock *si, struct esock_sock *so, int in, loff_t *off_in,
			  int out, loff_t *off_out, size_t len, unsigned int flags)
{
	size_t want = len < 65536 ? len : 65536;
	char *buf = malloc(want ? want : 1);
	struct iovec v = { buf, want };
	ssize_t n, rc;

	if (!buf)
		return -ENOMEM;
	if ((si && off_in) || (so && off_out) || (si && so)) {
		rc = si && so ? -EINVAL : -ESPIPE;
	} else if (si) {
		n = sock_recv(si, &v, 1, MSG_PEEK | (flags & SPLICE_F_NONBLOCK ? MSG_DONTWAIT : 0), NULL);
		rc = n;
		if (n > 0) {
			rc = off_out ? pwrite(out, buf, (size_t)n, *off_out) : REAL(write)(out, buf, (size_t)n);
			if (rc < 0) {
				rc = -errno;
			} else {
				v.iov_len = (size_t)rc;
				if (rc > 0 && sock_recv(si, &v, 1, MSG_DONTWAIT, NULL) != rc)
					log_error("fd %d: splice lost octets the socket had peeked", in);
				if (off_out)
					*off_out += rc;
			}
		}
	} else {
		n = off_in ? pread(in, buf, want, *off_in) : REAL(read)(in, buf, want);
		rc = n < 0 ? -errno : n;
		if (n > 0) {
			v.iov_len = (size_t)n;
			rc = sock_send_ex(so, &v, 1, MSG_NOSIGNAL, true);
			if (rc > 0 && off_in)
				*off_in += rc;
		}
	}
	free(buf);
	return rc;
}

API ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len, unsigned int flags)
{
	struct esock_sock *si = sock_get(in), *so = sock_get(out);
	ssize_t rc;

	if (!si && !so)
		return REAL(splice)(in, off_in, out, off_out, len, flags);
	rc = ddp_splice(si, so, in, off_in, out, off_out, len, flags);
	if (si)
		sock_put(si);
	if (so)
		sock_put(so);
	return ret(rc);
}

/* ---- options and descriptor control ---- */

API int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct esock_sock *s;
	long rc;

	if ((s = sock_get(fd))) { /* (a table look-up and NULL for anything not ours) */
		if (s->off) { /* (every option of an offloaded socket is tcpserverd's, or ours) */
			rc = sock_off_setopt(s, level, name, val, len);
			sock_put(s);
			return (int)ret(rc);
		}
		sock_put(s);
	}
	if (level != SOL_ESOCK) {
		int r;

		if (level == IPPROTO_TCP && name == TCP_NODELAY && (s = sock_get(fd))) {
			rc = sock_set_nodelay(s, val, len);
			sock_put(s);
			return (int)ret(rc);
		}
		r = REAL(setsockopt)(fd, level, name, val, len);
		if (r == 0 && level == SOL_SOCKET &&
		    (name == SO_RCVTIMEO || name == SO_SNDTIMEO || name == SO_LINGER) &&
		    (s = sock_get(fd))) {
			if (name == SO_LINGER)
				sock_linger_set(s, val, len); /* (close resets or not: known without asking) */
			else
				sock_timeo_read(s); /* a DDPMODE socket waits in user space: it needs them */
			sock_put(s);
		}
		return r;
	}
	if (!(s = sock_get(fd))) {
		int on = 0;

		if (name != ESOCK_DDPMODE)
			return (int)ret(-EINVAL); /* ESOCK_DDPMODE first */
		if (!val || len < (socklen_t)sizeof(int))
			return (int)ret(-EINVAL);
		memcpy(&on, val, sizeof(on));
		return (int)ret(sock_enable(fd, on));
	}
	rc = sock_setopt(s, level, name, val, len);
	sock_put(s);
	return (int)ret(rc);
}

API int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct esock_sock *s;
	long rc;

	if (level == SOL_ESOCK && fd == -1 && name == ESOCK_GET_API) {
		const struct esock_api *a = sock_api();

		if (!val || !len || *len < (socklen_t)sizeof(a))
			return (int)ret(-EINVAL);
		memcpy(val, &a, sizeof(a));
		*len = sizeof(a);
		return 0;
	}
	if (!(s = level == SOL_ESOCK ? sock_get_any(fd) : sock_get(fd))) {
		if (level != SOL_ESOCK)
			return REAL(getsockopt)(fd, level, name, val, len);
		if (name == ESOCK_DDPMODE && val && len && *len >= (socklen_t)sizeof(int)) {
			int off = 0;
			int r = REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &off, len);

			off = 0;
			if (r == 0)
				memcpy(val, &off, sizeof(off));
			return r;
		}
		return (int)ret(-ENOPROTOOPT);
	}
	if (s->off)
		rc = sock_off_getopt(s, level, name, val, len);
	else if (level == SOL_ESOCK)
		rc = sock_getopt(s, level, name, val, len);
	else if (level == SOL_SOCKET && name == SO_ERROR && s->st == SOCK_FAILED && val && len &&
		 *len >= (socklen_t)sizeof(int)) {
		memcpy(val, &s->err, sizeof(int)); /* why the MPA exchange failed */
		*len = sizeof(int);
		rc = 0;
	} else
		rc = REAL(getsockopt)(fd, level, name, val, len) < 0 ? -errno : 0;
	sock_put(s);
	return (int)ret(rc);
}

static int ddp_fcntl(struct esock_sock *s, int fd, int cmd, long arg)
{
	/* A listener's file stays non-blocking (sock_listen); the application sees its own flag. */
	bool lst = (s->st == SOCK_LISTENING && s->lst) || s->off;
	long app = arg; /* (what the application asked for) */
	int rc;

	/*
	 * An offloaded socket's file is a copy of one shared by others: its
	 * O_NONBLOCK stays as it is, the sock keeps the application's.
	 */
	if (s->off && cmd == F_SETFL)
		arg = (arg & ~(long)O_NONBLOCK) | (REAL(fcntl)(fd, F_GETFL) & O_NONBLOCK);
	rc = REAL(fcntl)(fd, cmd, lst && !s->off && cmd == F_SETFL ? arg | O_NONBLOCK : arg);

	if (rc >= 0 && cmd == F_SETFD && fd == s->cloexec_fd)
		s->cloexec = (arg & FD_CLOEXEC) != 0;
	if (rc >= 0 && cmd == F_SETFD && !(arg & FD_CLOEXEC))
		sock_keep_cloexec(s, fd); /* crossing exec is the handoff's (sock_handoff.c) */
	else if (rc >= 0 && cmd == F_SETFD)
		sock_note_inherit(fd, false);

	if (rc >= 0) {
		if (cmd == F_GETFL && lst)
			rc = (rc & ~O_NONBLOCK) | (s->nonblock ? O_NONBLOCK : 0);
		if (cmd == F_SETFL)
			s->nonblock = (app & O_NONBLOCK) != 0;
		else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			sock_dup_fd(fd, rc);
	}
	sock_put(s);
	return rc;
}

API int fcntl(int fd, int cmd, ...)
{
	struct esock_sock *s = sock_get(fd);
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long); /* every fcntl argument fits a long (int or pointer) */
	va_end(ap);
	if (!s)
		return REAL(fcntl)(fd, cmd, arg);
	return ddp_fcntl(s, fd, cmd, arg);
}

/* glibc 2.28's fcntl64: the same call (off_t is 64-bit here). */
API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

API int ioctl(int fd, unsigned long req, ...)
{
	struct esock_sock *s = sock_get(fd);
	va_list ap;
	void *arg;
	int rc;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!s)
		return REAL(ioctl)(fd, req, arg);
	if (s->off && req == FIONREAD && arg) {
		rc = (int)ret(sock_off_fionread(s, arg));
	} else if (s->off && req == FIONBIO && arg) {
		s->nonblock = *(int *)arg != 0; /* (the file is shared: ddp_fcntl) */
		rc = 0;
	} else if (req == FIONREAD && arg) {
		pthread_mutex_lock(&s->lock);
		sock_pull(s);
		*(int *)arg = (int)(s->o.msgmode && s->rcount
				    ? s->rlen[s->rdone[s->rhead]] : s->rready > 0x7fffffff
				    ? 0x7fffffff : s->rready);
		pthread_mutex_unlock(&s->lock);
		rc = 0;
	} else if (req == FIONBIO && arg && s->st == SOCK_LISTENING && s->lst) {
		s->nonblock = *(int *)arg != 0; /* the file stays non-blocking (sock_listen) */
		rc = 0;
	} else {
		rc = REAL(ioctl)(fd, req, arg);
		if (rc == 0 && req == FIONBIO && arg)
			s->nonblock = *(int *)arg != 0;
	}
	sock_put(s);
	return rc;
}

API int dup(int fd)
{
	int nfd = REAL(dup)(fd);

	if (nfd >= 0 && esock_fdtab_get(fd))
		sock_dup_fd(fd, nfd);
	return nfd;
}

API int dup3(int old, int nfd, int flags)
{
	int rc;

	if (old == nfd || (!esock_fdtab_get(old) && !esock_fdtab_get(nfd)))
		return REAL(dup3)(old, nfd, flags);
	sock_release_fd(nfd); /* dup3 closes what nfd named */
	if ((rc = REAL(dup3)(old, nfd, flags)) >= 0 && esock_fdtab_get(old))
		sock_dup_fd(old, nfd);
	return rc;
}

API int dup2(int old, int nfd)
{
	int rc;

	if (old == nfd || (!esock_fdtab_get(old) && !esock_fdtab_get(nfd)))
		return REAL(dup2)(old, nfd);
	sock_release_fd(nfd);
	if ((rc = REAL(dup2)(old, nfd)) >= 0 && esock_fdtab_get(old))
		sock_dup_fd(old, nfd);
	return rc;
}

/* ---- readiness ---- */

API int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!atomic_load_explicit(&sock_count, memory_order_relaxed))
		return REAL(poll)(fds, n, timeout);
	return sock_poll(fds, n, timeout, NULL);
}

static int ts_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	if (!atomic_load_explicit(&sock_count, memory_order_relaxed))
		return REAL(ppoll)(fds, n, ts, mask);
	return sock_poll(fds, n, ts_ms(ts), mask); /* (the mask holds in its sleeps, as the kernel's) */
}

/*
 * fd_set bits by hand: glibc lets a program pass sets larger than
 * FD_SETSIZE (nfds beyond 1024), which FD_ISSET's checked form would abort on.
 */
#define SET_BITS (8 * (int)sizeof(unsigned long))

static inline bool in_set(const fd_set *set, int fd)
{
	return set && (((const unsigned long *)(const void *)set)[fd / SET_BITS] >> (fd % SET_BITS)) & 1;
}

static inline void set_clr(fd_set *set, int fd)
{
	((unsigned long *)(void *)set)[fd / SET_BITS] &= ~(1ul << (fd % SET_BITS));
}

/* select through sock_poll, when a DDPMODE descriptor is in the sets. */
static int select_ddp(int nfds, fd_set *r, fd_set *w, fd_set *x, int timeout_ms,
		      const sigset_t *mask)
{
	struct pollfd small[64], *p = small;
	int n = 0, rc;

	if (nfds > 64 && !(p = calloc((size_t)nfds, sizeof(*p))))
		return (int)ret(-ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((in_set(r, fd) ? POLLIN : 0) | (in_set(w, fd) ? POLLOUT : 0) |
				   (in_set(x, fd) ? POLLPRI : 0));

		if (ev)
			p[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	rc = sock_poll(p, (nfds_t)n, timeout_ms, mask);
	if (rc >= 0) {
		rc = 0;
		for (int i = 0; i < n; i++) {
			int fd = p[i].fd;
			short re = p[i].revents;

			if (re & POLLNVAL) {
				rc = (int)ret(-EBADF);
				break;
			}
			if (in_set(r, fd) && !(re & (POLLIN | POLLHUP | POLLERR)))
				set_clr(r, fd);
			if (in_set(w, fd) && !(re & (POLLOUT | POLLERR)))
				set_clr(w, fd);
			if (in_set(x, fd) && !(re & POLLPRI))
				set_clr(x, fd);
			rc += in_set(r, fd) + in_set(w, fd) + in_set(x, fd);
		}
	}
	if (p != small)
		free(p);
	return rc;
}

static bool sets_have_ddp(int nfds, fd_set *r, fd_set *w, fd_set *x)
{
	if (!atomic_load_explicit(&sock_count, memory_order_relaxed) || nfds <= 0)
		return false;
	for (int fd = 0; fd < nfds; fd++)
		if ((in_set(r, fd) || in_set(w, fd) || in_set(x, fd)) && esock_fdtab_get(fd))
			return true; /* (sock_poll looks at the others) */
	/* The kernel's select: an epoll set among them is watched from outside. */
	if (atomic_load_explicit(&sock_epoll_used, memory_order_relaxed))
		for (int fd = 0; fd < nfds; fd++)
			if (in_set(r, fd) || in_set(w, fd) || in_set(x, fd))
				sock_epoll_outside(fd);
	return false;
}

API int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	int ms;

	if (!sets_have_ddp(nfds, r, w, x))
		return REAL(select)(nfds, r, w, x, tv);
	ms = tv ? (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000) : -1;
	return select_ddp(nfds, r, w, x, ms, NULL);
}

API int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		const sigset_t *mask)
{
	if (!sets_have_ddp(nfds, r, w, x))
		return REAL(pselect)(nfds, r, w, x, ts, mask);
	return select_ddp(nfds, r, w, x, ts_ms(ts), mask); /* (the mask holds in its sleeps) */
}

API int epoll_create1(int flags)
{
	int fd = REAL(epoll_create1)(flags);

	if (fd >= 0 && atomic_load_explicit(&sock_count, memory_order_relaxed))
		sock_epoll_fresh(fd);
	return fd;
}

API int epoll_create(int size)
{
	int fd = REAL(epoll_create)(size);

	if (fd >= 0 && atomic_load_explicit(&sock_count, memory_order_relaxed))
		sock_epoll_fresh(fd);
	return fd;
}

API int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct esock_sock *s = sock_get(fd);
	long rc;

	if (!s) {
		if (op == EPOLL_CTL_ADD && atomic_load_explicit(&sock_epoll_used, memory_order_relaxed))
			sock_epoll_outside(fd); /* (a set inside a set) */
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	}
	if (s->st == SOCK_PLAIN) { /* the kernel's readiness is right */
		sock_put(s);
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	}
	rc = sock_epoll_ctl(s, epfd, op, fd, ev);
	sock_put(s);
	return (int)ret(rc);
}

API int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (!atomic_load_explicit(&sock_epoll_regs, memory_order_relaxed))
		return atomic_load_explicit(&sock_epoll_used, memory_order_relaxed)
			       ? sock_epoll_pass(epfd, ev, max, timeout, NULL)
			       : REAL(epoll_wait)(epfd, ev, max, timeout);
	return sock_epoll_wait(epfd, ev, max, timeout, NULL);
}

API int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	if (!atomic_load_explicit(&sock_epoll_regs, memory_order_relaxed))
		return atomic_load_explicit(&sock_epoll_used, memory_order_relaxed)
			       ? sock_epoll_pass(epfd, ev, max, timeout, mask)
			       : REAL(epoll_pwait)(epfd, ev, max, timeout, mask);
	return sock_epoll_wait(epfd, ev, max, timeout, mask);
}

/*
 * epoll_pwait2 (glibc 2.35, nanosecond timeout): resolved on first use, since
 * an older C library has none (then ENOSYS, as such a libc would say).
 */
typedef int (*pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);

API int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
		     const sigset_t *mask)
{
	static _Atomic(pwait2_fn) real_pwait2;
	pwait2_fn f = atomic_load_explicit(&real_pwait2, memory_order_relaxed);

	if (atomic_load_explicit(&sock_epoll_regs, memory_order_relaxed) ||
	    atomic_load_explicit(&sock_epoll_used, memory_order_relaxed))
		return sock_epoll_wait(epfd, ev, max, ts_ms(ts), mask);
	if (!f) {
		*(void **)&f = dlsym(RTLD_NEXT, "epoll_pwait2");
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		atomic_store_explicit(&real_pwait2, f, memory_order_relaxed);
	}
	return f(epfd, ev, max, ts, mask);
}

/* ---- glibc's fortified entry points (-D_FORTIFY_SOURCE binaries call these) ---- */

extern void __chk_fail(void) __attribute__((noreturn));
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *alen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
		size_t fdslen);

API ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			   struct sockaddr *addr, socklen_t *alen)
{
	if (len > buflen)
		__chk_fail();
	return recvfrom(fd, buf, len, flags, addr, alen);
}

API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return poll(fds, n, timeout);
}

API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		    const sigset_t *mask, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return ppoll(fds, n, ts, mask);
}

/* ---- exec: connections the application keeps are carried (sock_handoff.c) ---- */

/*
 * Every exec function has its wrapper: glibc's calls between them are
 * internal, so execvp reaching execve would not pass here.  |which|: 0
 * execve (path), 1 execvpe (file, searched in PATH), 2 fexecve (fd).
 */
static int exec_with(int which, const char *path, int fd, char *const argv[], char *const envp[])
{
	char **env = atomic_load_explicit(&sock_count, memory_order_relaxed) ? sock_handoff_prepare(envp)
									    : NULL;
	char *const *use = env ? env : envp;
	int rc, e;

	rc = which == 0 ? REAL(execve)(path, argv, use)
	     : which == 1 ? REAL(execvpe)(path, argv, use) : REAL(fexecve)(fd, argv, use);
	e = errno; /* (only a failed exec comes back) */
	sock_handoff_abort(env);
	errno = e;
	return rc;
}

API int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_with(0, path, -1, argv, envp);
}

API int execv(const char *path, char *const argv[])
{
	return exec_with(0, path, -1, argv, environ);
}

API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_with(1, file, -1, argv, envp);
}

API int execvp(const char *file, char *const argv[])
{
	return exec_with(1, file, -1, argv, environ);
}

API int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_with(2, NULL, fd, argv, envp);
}

/*
 * vfork is fork here (POSIX allows it): a vfork child shares the parent's
 * memory, and the exec wrappers above take locks and quiesce connections
 * before the exec, which would leave them taken in the parent for good.
 * (posix_spawn's internal clone and exec pass no wrapper: its children
 * carry no connection.)
 */
API pid_t vfork(void)
{
	return fork();
}

/* The list forms: their arguments gathered into a vector (on this frame: exec replaces it). */
static int exec_va(int which, const char *path, const char *arg, va_list ap, bool with_env)
{
	char **argv, *const *envp = environ;
	size_t n = 1;
	va_list cp;

	va_copy(cp, ap);
	while (va_arg(cp, char *))
		n++;
	va_end(cp);
	argv = alloca((n + 1) * sizeof(char *));
	argv[0] = (char *)arg;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	if (with_env)
		envp = va_arg(ap, char *const *);
	return exec_with(which, path, -1, argv, envp);
}

API int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_va(0, path, arg, ap, false);
	va_end(ap);
	return rc;
}

API int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_va(1, file, arg, ap, false);
	va_end(ap);
	return rc;
}

API int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_va(0, path, arg, ap, true);
	va_end(ap);
	return rc;
}

/* ---- stdio on a connection (sock_stdio.c) ---- */

API FILE *fdopen(int fd, const char *mode)
{
	struct esock_sock *s = sock_get(fd);

	if (!s)
		return REAL(fdopen)(fd, mode);
	sock_put(s);
	return sock_stdio_open(fd, mode);
}

API int vdprintf(int fd, const char *fmt, va_list ap)
{
	struct esock_sock *s = sock_get(fd);
	int rc;

	if (!s)
		return REAL(vdprintf)(fd, fmt, ap);
	rc = sock_stdio_vdprintf(s, fmt, ap);
	sock_put(s);
	return (int)ret(rc);
}

API int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}
