/* SPDX-License-Identifier: MIT */
/* A host's channel to tcpserverd (chan.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcpserver/chan.h"
#include "tcpserver/sys.h"

#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* What travels with the two descriptors. */
struct hand {
	uint32_t magic; /* "tspc" */
	uint32_t cap;
};
#define HAND_MAGIC 0x74737063u

static void init(struct tsp_chan *c)
{
	memset(c, 0, sizeof(*c));
	c->memfd = c->bell = c->hbell = -1;
	c->mem = MAP_FAILED;
}

void tsp_chan_close(struct tsp_chan *c)
{
	esock_shmq_detach(c->req);
	esock_shmq_detach(c->resp);
	if (c->mem != MAP_FAILED && c->mem)
		munmap(c->mem, c->len);
	if (c->memfd >= 0)
		TSP_CLOSE(c->memfd);
	if (c->bell >= 0)
		TSP_CLOSE(c->bell);
	if (c->hbell >= 0)
		TSP_CLOSE(c->hbell);
	init(c);
}

int tsp_chan_create(struct tsp_chan *c, uint32_t cap)
{
	size_t q = esock_shmq_size(cap);
	int rc;

	init(c);
	if (!q)
		return -EINVAL;
	c->len = 2 * q;
	if ((c->memfd = memfd_create("esock-tsp", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0 ||
	    ftruncate(c->memfd, (off_t)c->len) < 0 || TSP_SYS(fcntl)(c->memfd, F_ADD_SEALS, SEALS) < 0 ||
	    (c->bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    (c->hbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    (c->mem = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd, 0)) == MAP_FAILED)
		goto fail;
	TSP_OWN(c->memfd);
	TSP_OWN(c->bell);
	TSP_OWN(c->hbell);
	if (!(c->req = esock_shmq_init(c->mem, cap)) ||
	    !(c->resp = esock_shmq_init((uint8_t *)c->mem + q, cap))) {
		errno = ENOMEM;
		goto fail;
	}
	esock_shmq_set_bell(c->req, c->bell); /* tcpserverd sleeps in epoll, not on the futex */
	return 0;
fail:
	rc = -errno;
	tsp_chan_close(c);
	return rc;
}

/* The hand and room for three descriptors, as one message of the Unix socket. */
struct hand_msg {
	struct hand h;
	struct iovec iov;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m;
};

static void hand_msg_init(struct hand_msg *x)
{
	memset(x, 0, sizeof(*x));
	x->iov = (struct iovec){ &x->h, sizeof(x->h) };
	x->m.msg_iov = &x->iov;
	x->m.msg_iovlen = 1;
	x->m.msg_control = x->u.buf;
	x->m.msg_controllen = sizeof(x->u.buf);
}

int tsp_chan_send(const struct tsp_chan *c, int usock)
{
	struct hand_msg x;
	struct cmsghdr *cm;
	int fds[3] = { c->memfd, c->bell, c->hbell };

	hand_msg_init(&x);
	x.h = (struct hand){ HAND_MAGIC, (uint32_t)(c->len / 2 - 256) };
	cm = CMSG_FIRSTHDR(&x.m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	return TSP_SYS(sendmsg)(usock, &x.m, MSG_NOSIGNAL) == (ssize_t)sizeof(x.h) ? 0 : -errno;
}

int tsp_chan_recv(struct tsp_chan *c, int usock)
{
	struct hand_msg x;
	struct hand h;
	struct msghdr m;
	struct cmsghdr *cm;
	struct stat st;
	ssize_t n;
	size_t q;
	int fds[3];

	init(c);
	hand_msg_init(&x);
	n = recvmsg(usock, &x.m, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	h = x.h;
	m = x.m;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(fds))) {
		/* (descriptors that came in another shape are closed by their number, if any) */
		for (; cm; cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
					int fd;

					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
					close(fd);
				}
		return -EPROTO;
	}
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	c->memfd = fds[0];
	c->bell = fds[1];
	c->hbell = fds[2];
	if (n != (ssize_t)sizeof(h) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    h.magic != HAND_MAGIC || !(q = esock_shmq_size(h.cap)) ||
	    fcntl(c->memfd, F_GET_SEALS) != SEALS || fstat(c->memfd, &st) < 0 ||
	    (size_t)st.st_size != 2 * q) {
		tsp_chan_close(c);
		return -EPROTO;
	}
	c->len = 2 * q;
	if ((c->mem = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd, 0)) == MAP_FAILED ||
	    !(c->req = esock_shmq_attach(c->mem, q)) ||
	    !(c->resp = esock_shmq_attach((uint8_t *)c->mem + q, q))) {
		tsp_chan_close(c);
		return -EPROTO;
	}
	esock_shmq_set_bell(c->resp, c->hbell); /* the host sleeps in poll or epoll */
	return 0;
}
