/* SPDX-License-Identifier: MIT */
/*
 * One DDPMODE connection used by several processes one after another, as
 * sshd does (issue 13): its per-connection process speaks first, forks a
 * pre-auth child that goes on and exits, then goes on itself (or forks a
 * post-auth child that does).  A TCP socket's state is in the kernel; a
 * DDPMODE connection's is in the memory of the process that used it last,
 * so each must take up where the previous one left: MSNs, and messages
 * that arrived but were not read yet.  Before, the parent's stale copy sent
 * with old MSNs and the peer Terminated ("invalid MSN").  Also: a process
 * that ends without leaving the state (killed), and two processes at once,
 * fail loudly (ECONNABORTED, EBUSY) instead of corrupting the stream.
 * Linked against libesock.so.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/sock_util.h"
#include "tests/unit/testutil.h"

/* Message k: its size and pattern (sizes cross the 64 KiB of one receive buffer). */
static size_t msg_len(int k)
{
	static const size_t len[] = { 1000, 70000, 5, 4096, 150000, 1, 33333, 64 };

	return len[k % 8];
}

static void fill(uint8_t *p, int k)
{
	for (size_t i = 0; i < msg_len(k); i++)
		p[i] = (uint8_t)(k * 31 + i * 7);
}

static uint8_t buf[200000], want[200000];

/* Reads exactly |n| octets; 0, or -errno (-1 for an early end). */
static int read_n(int fd, uint8_t *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r == 0)
			return -1;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		got += (size_t)r;
	}
	return 0;
}

static int write_n(int fd, const uint8_t *p, size_t n)
{
	size_t put = 0;

	while (put < n) {
		ssize_t w = write(fd, p + put, n - put);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		put += (size_t)w;
	}
	return 0;
}

/* The peer sends message k. */
static void send_msg(int cli, int k)
{
	fill(want, k);
	ck_assert_int_eq(write_n(cli, want, msg_len(k)), 0);
}

/* The serving side (any process): reads message k and echoes it; 0 or why not. */
static int serve_msg(int srv, int k)
{
	int rc;

	fill(want, k);
	if ((rc = read_n(srv, buf, msg_len(k))) < 0)
		return rc == -1 ? 100 : -rc;
	if (memcmp(buf, want, msg_len(k)) != 0)
		return 101;
	return write_n(srv, buf, msg_len(k)) < 0 ? 102 : 0;
}

/* The peer gets message k back. */
static void check_echo(int cli, int k)
{
	fill(want, k);
	ck_assert_int_eq(read_n(cli, buf, msg_len(k)), 0);
	ck_assert_msg(memcmp(buf, want, msg_len(k)) == 0, "echo of message %d differs", k);
}

/* Waits until |fd| has input (the message is in the library's pool, not read). */
static bool input_waits(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 10000) == 1 && (p.revents & POLLIN);
}

static void reap_ok(pid_t pid)
{
	int status = -1;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %#x",
		      (unsigned)status);
}

/*
 * The parent serves message 0; child A serves 1, leaves 2 unread (arrived)
 * and ends (_i 0: exit; 1: close, then _exit);
 * the parent serves 2 and 3; child B serves 4 and 5 and ends; the parent
 * serves 6 and 7.  Every echo equal, in order.
 */
START_TEST(one_after_another)
{
	int cli, srv;
	pid_t pid;

	alarm(60);
	pairs(1, &cli, &srv);
	send_msg(cli, 0);
	ck_assert_int_eq(serve_msg(srv, 0), 0);
	check_echo(cli, 0);

	send_msg(cli, 1);
	send_msg(cli, 2);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = serve_msg(srv, 1);

		if (!rc && !input_waits(srv))
			rc = 103; /* message 2 must wait in this process's pool */
		if (_i == 1) {
			close(srv);
			_exit(rc);
		}
		exit(rc);
	}
	check_echo(cli, 1);
	reap_ok(pid);
	ck_assert_int_eq(serve_msg(srv, 2), 0); /* the child's unread message, from its state */
	check_echo(cli, 2);
	send_msg(cli, 3);
	ck_assert_int_eq(serve_msg(srv, 3), 0);
	check_echo(cli, 3);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = serve_msg(srv, 4);

		exit(rc ? rc : serve_msg(srv, 5));
	}
	send_msg(cli, 4);
	check_echo(cli, 4);
	send_msg(cli, 5);
	check_echo(cli, 5);
	reap_ok(pid);
	for (int k = 6; k < 8; k++) {
		send_msg(cli, k);
		ck_assert_int_eq(serve_msg(srv, k), 0);
		check_echo(cli, k);
	}
	close(srv);
	ck_assert_int_eq(read(cli, buf, 1), 0); /* the last holder's close ends it */
	close(cli);
	alarm(0);
}
END_TEST

/*
 * The child goes on with the connection and is killed: its state is gone.
 * The parent's next call says so (ECONNABORTED, poll: POLLERR), never
 * hands out octets read from the middle of the stream.
 */
START_TEST(killed_user_loses_it)
{
	int cli, srv, status;
	pid_t pid;
	struct pollfd p;

	alarm(60);
	pairs(1, &cli, &srv);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = serve_msg(srv, 0);

		if (rc)
			_exit(rc);
		pause();
		_exit(0);
	}
	send_msg(cli, 0);
	check_echo(cli, 0);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	send_msg(cli, 1);
	p = (struct pollfd){ .fd = srv, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	ck_assert_msg(p.revents & POLLERR, "poll gave %#x", (unsigned)p.revents);
	errno = 0;
	ck_assert_int_eq(read(srv, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ECONNABORTED);
	close(srv);
	close(cli);
	alarm(0);
}
END_TEST

/*
 * While the child uses the connection, the parent's read is refused
 * (EBUSY): two processes cannot drive one at once.  Once the child has
 * left it (exit), the parent goes on where the child stopped.
 */
struct sleeper {
	int fd, rc;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *sl = arg;

	sl->rc = read_n(sl->fd, buf, msg_len(4));
	return NULL;
}

/*
 * A thread sleeps in its socket's receive (a blocking read with nothing to
 * read) while another thread forks: the fork does not wait for it (the
 * sleep may last), the child never touches the connection and exits, and
 * the message that comes after reaches the sleeping reader whole; then the
 * connection goes on in the parent.
 */
START_TEST(fork_while_a_reader_sleeps)
{
	struct sleeper sl = { .rc = -1 };
	pthread_t th;
	int cli, srv;
	pid_t pid;

	pairs(1, &cli, &srv);
	sl.fd = srv;
	ck_assert_int_eq(pthread_create(&th, NULL, sleeper_main, &sl), 0);
	usleep(100000); /* (asleep by now) */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	reap_ok(pid);
	send_msg(cli, 4); /* 150 000 octets: several FPDUs, the first one the sleeper's */
	pthread_join(th, NULL);
	ck_assert_int_eq(sl.rc, 0);
	ck_assert_msg(memcmp(buf, want, msg_len(4)) == 0, "the message read differs");
	send_msg(cli, 5);
	ck_assert_int_eq(serve_msg(srv, 5), 0);
	check_echo(cli, 5);
	close(cli);
	close(srv);
}
END_TEST

START_TEST(two_at_once_refused)
{
	int cli, srv, go[2];
	pid_t pid;
	char c = 0;

	alarm(60);
	pairs(1, &cli, &srv);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = serve_msg(srv, 0);

		close(go[1]);
		if (!rc && read(go[0], &c, 1) != 1) /* until the parent has tried */
			rc = 104;
		exit(rc);
	}
	close(go[0]);
	send_msg(cli, 0);
	check_echo(cli, 0);
	errno = 0;
	ck_assert_int_eq(read(srv, buf, 1), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	reap_ok(pid);
	send_msg(cli, 1);
	ck_assert_int_eq(serve_msg(srv, 1), 0);
	check_echo(cli, 1);
	close(go[1]);
	close(srv);
	close(cli);
	alarm(0);
}
END_TEST

/*
 * Threads take messages in (a reader, and the engine's thread: an epoll
 * set watches the socket) while another thread forks again and again:
 * each fork waits for the receive under way to finish, and must never
 * hold a lock that receive needs meanwhile.  Before, the receive buffers'
 * lock could be taken first (fork handlers ran in the order the modules
 * happened to register them), and a fork that met a receive refilling its
 * queue hung for good: sshd's pre-auth fork, once in about a hundred
 * connections.  Every message arrives whole and in order.
 */
#define FEED_MSGS 2000

struct feeder {
	int fd, rc;
};

static void *feeder_main(void *arg)
{
	static uint8_t out[200000];
	struct feeder *f = arg;

	for (int k = 0; k < FEED_MSGS && !f->rc; k++) {
		fill(out, k);
		f->rc = write_n(f->fd, out, msg_len(k));
	}
	return NULL;
}

struct taker {
	int fd, rc;
	atomic_bool done;
};

static void *taker_main(void *arg)
{
	static uint8_t in[200000], exp[200000];
	struct taker *t = arg;

	for (int k = 0; k < FEED_MSGS && !t->rc; k++) {
		fill(exp, k);
		if ((t->rc = read_n(t->fd, in, msg_len(k))) == 0 && memcmp(in, exp, msg_len(k)))
			t->rc = 1000 + k;
	}
	atomic_store(&t->done, true);
	return NULL;
}

START_TEST(forks_while_receives_go_on)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct feeder f = { .rc = 0 };
	struct taker t = { .rc = 0 };
	pthread_t fth, tth;
	int cli, srv, ep, forks = 0;

	alarm(120);
	pairs(1, &cli, &srv);
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ev.data.fd = srv;
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, srv, &ev), 0); /* (the engine's thread starts) */
	f.fd = cli;
	t.fd = srv;
	ck_assert_int_eq(pthread_create(&fth, NULL, feeder_main, &f), 0);
	ck_assert_int_eq(pthread_create(&tth, NULL, taker_main, &t), 0);
	while (!atomic_load(&t.done)) {
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(0);
		reap_ok(pid);
		forks++;
	}
	pthread_join(tth, NULL);
	pthread_join(fth, NULL);
	ck_assert_int_eq(f.rc, 0);
	ck_assert_msg(t.rc == 0, "the reader: %d", t.rc);
	ck_assert_int_gt(forks, 0);
	close(ep);
	close(srv);
	close(cli);
	alarm(0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock fork");
	TCase *tc = tcase_create("shared");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, one_after_another, 0, 2);
	tcase_add_test(tc, killed_user_loses_it);
	tcase_add_test(tc, two_at_once_refused);
	tcase_add_test(tc, fork_while_a_reader_sleeps);
	tcase_add_test(tc, forks_while_receives_go_on);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
