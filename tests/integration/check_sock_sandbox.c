/* SPDX-License-Identifier: MIT */
/*
 * A forked child that sandboxes itself, as sshd's pre-auth child does, must
 * carry on its DDPMODE connection with the calls the application itself
 * makes on it (issue 13): the child installs a seccomp filter that allows
 * sshd's list (read, write, poll, select, shutdown, memory, time, futex,
 * signals' mask) and kills the process for anything else (epoll_create1,
 * eventfd, recvfrom, sendmsg, sched_yield, getsockopt, clone, ...), then
 * echoes what a DDPMODE client sends, with poll and read/write, both ways,
 * in both blocking and non-blocking modes, and after a call on the
 * connection before the sandbox (which may start the library's engine),
 * while the parent closes its copy at once (as sshd's listener does); and
 * a sandboxed child waiting in poll must sleep, not spin.  Before, the
 * library started its engine in the child (epoll_create1: killed).  Linked
 * against libesock.so.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define HAVE_FILTER 1
#endif

#include <esock/esock.h>

#include "tests/integration/sock_util.h"
#include "tests/unit/testutil.h"

#define TOTAL (1u << 20)

#ifdef HAVE_FILTER
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* sshd's pre-auth list (sandbox-seccomp-filter.c), x86-64; anything else kills. */
static int sandbox(void)
{
	static struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(__NR_read), ALLOW(__NR_write), ALLOW(__NR_close), ALLOW(__NR_poll),
		ALLOW(__NR_ppoll), ALLOW(__NR_select), ALLOW(__NR_pselect6), ALLOW(__NR_shutdown),
		ALLOW(__NR_exit), ALLOW(__NR_exit_group), ALLOW(__NR_futex), ALLOW(__NR_getpid),
		ALLOW(__NR_getrandom), ALLOW(__NR_gettimeofday), ALLOW(__NR_clock_gettime),
		ALLOW(__NR_clock_nanosleep), ALLOW(__NR_nanosleep), ALLOW(__NR_brk),
		ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mremap), ALLOW(__NR_madvise),
		ALLOW(__NR_mprotect), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
		ALLOW(__NR_restart_syscall), ALLOW(__NR_time),
#if defined(__SANITIZE_ADDRESS__)
		ALLOW(__NR_sigaltstack), /* the sanitizer's own, as the process ends */
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	static struct sock_filter all[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	static const struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	static const struct sock_fprog lax = { .len = 1, .filter = all };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	/* Under valgrind (its own system calls meet the filter): one that allows all, still a sandbox. */
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, tu_under_valgrind() ? &lax : &prog);
}
#endif

/* The sandboxed child: echo until the client's end, then leave (exit status 0, or why not). */
static void child_echo(int c, bool early)
{
	static char buf[65536];

	if (early) {
		/* A call on the connection before the sandbox: the library may start its engine here. */
		struct pollfd p = { .fd = c, .events = POLLIN };

		(void)poll(&p, 1, 0);
		(void)!recv(c, buf, 0, MSG_DONTWAIT);
	}
#ifdef HAVE_FILTER
	if (sandbox() < 0)
		_exit(10);
#endif
	for (;;) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		ssize_t n = read(c, buf, sizeof(buf)), w = 0;

		if (n == 0)
			break;
		if (n < 0 && errno == EAGAIN) {
			if (poll(&p, 1, 10000) != 1)
				_exit(11);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* (write is on the list: say why, for the log) */
			static const char msg[] = "sandboxed child: read failed, errno ";
			char num[4] = { (char)('0' + errno / 100 % 10), (char)('0' + errno / 10 % 10),
					(char)('0' + errno % 10), '\n' };

			(void)!write(2, msg, sizeof(msg) - 1);
			(void)!write(2, num, sizeof(num));
			_exit(12);
		}
		while (w < n) {
			ssize_t k = write(c, buf + w, (size_t)(n - w));

			if (k > 0) {
				w += k;
			} else if (k < 0 && errno == EAGAIN) {
				struct pollfd o = { .fd = c, .events = POLLOUT };

				if (poll(&o, 1, 10000) != 1)
					_exit(13);
			} else {
				_exit(14);
			}
		}
	}
	close(c);
	_exit(0);
}

START_TEST(sandboxed_child_carries_on)
{
	bool nonblock = _i == 1;
	struct echo_client cl = { .total = TOTAL, .piece = 12345 };
	int lfd, c, status = -1;
	pid_t pid;

	alarm(60);
	lfd = listener(0, 0, &cl.sa);
	echo_client_start(&cl);
	c = accept4(lfd, NULL, NULL, nonblock ? SOCK_NONBLOCK : 0);
	ck_assert_int_ge(c, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(lfd);
		child_echo(c, _i == 2);
	}
	close(c); /* as sshd's listener does: the child carries the connection on alone */
	echo_client_join(&cl);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!WIFSIGNALED(status), "the sandboxed child was killed by signal %d%s",
		      WTERMSIG(status), WTERMSIG(status) == SIGSYS ? " (a system call outside its filter)" : "");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exited with %d",
		      WEXITSTATUS(status));
	ck_assert_msg(cl.ok, "%zu of %u octets echoed", cl.echoed, TOTAL);
	close(lfd);
	alarm(0);
}
END_TEST

/* A client that says one octet after |arg| ms, then leaves. */
struct late {
	struct sockaddr_in sa;
	pthread_t th;
	int ms;
};

static void *late_main(void *arg)
{
	struct late *l = arg;
	int fd = ddp_socket(0);

	if (connect(fd, (struct sockaddr *)&l->sa, sizeof(l->sa)) == 0) {
		nanosleep(&(struct timespec){ l->ms / 1000, (l->ms % 1000) * 1000000L }, NULL);
		(void)!send(fd, "x", 1, 0);
		shutdown(fd, SHUT_WR);
		char b;

		(void)!recv(fd, &b, 1, 0); /* until the child is done */
	}
	close(fd);
	return NULL;
}

/*
 * A sandboxed child waiting in poll sleeps: it has no CQ descriptor there,
 * and the poll once took that for "completions came, look again" and spun
 * on the CPU for the whole wait.
 */
START_TEST(sandboxed_child_sleeps)
{
	struct late l = { .ms = 1500 };
	int lfd, c, out[2], status = -1;
	double cpu;
	pid_t pid;

	alarm(60);
	ck_assert_int_eq(pipe(out), 0);
	lfd = listener(0, 0, &l.sa);
	ck_assert_int_eq(pthread_create(&l.th, NULL, late_main, &l), 0);
	c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
	ck_assert_int_ge(c, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char b[16];
		struct pollfd p = { .fd = c, .events = POLLIN };

		struct timespec t0, t1;

		close(lfd);
		close(out[0]);
#ifdef HAVE_FILTER
		if (sandbox() < 0)
			_exit(10);
#endif
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
		if (poll(&p, 1, 10000) != 1)
			_exit(11);
		if (read(c, b, sizeof(b)) != 1)
			_exit(12);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
		cpu = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		_exit(write(out[1], &cpu, sizeof(cpu)) == (ssize_t)sizeof(cpu) ? 0 : 13);
	}
	close(c);
	close(out[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	pthread_join(l.th, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %#x",
		      (unsigned)status);
	ck_assert_int_eq(read(out[0], &cpu, sizeof(cpu)), (ssize_t)sizeof(cpu));
	close(out[0]);
	/* The wait's own CPU, measured in the child: a spin uses all 1.5 s; what a
	 * checker such as valgrind spends as the process starts and ends is not counted. */
	ck_assert_msg(cpu < 0.5, "the child used %.2f s of CPU in a 1.5 s wait", cpu);
	close(lfd);
	alarm(0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock sandbox");
	TCase *tc = tcase_create("seccomp");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, sandboxed_child_carries_on, 0, 3);
	tcase_add_test(tc, sandboxed_child_sleeps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_forked(suite()); /* the restriction is one-way: a process per test */
}
