// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * siw-widen: a test aid for kpatch/linux's siw patches, loaded in the interop
 * guest only.  It widens two windows that are microseconds wide, so that siw
 * as shipped shows its defect on demand (and the patched siw must not):
 *
 * delay_ms (0003, the accept race): siw_accept() moves the QP to RTS, sends
 * the MPA Reply (siw_send_mpareqrep()) and only then gives the socket's
 * upcalls to the QP; an FPDU that arrives in between wakes the connection
 * manager, which ignores it, and stays unread.  The CPU is held for delay_ms
 * when siw_send_mpareqrep() returns (a Request's too): an initiator on another
 * CPU that sends its first FPDU as soon as it has the Reply lands in it.
 *
 * short_ms (0005, two contexts on one send queue): when siw_tx_hdt()'s
 * kernel_sendmsg() comes back short or with -EAGAIN in a system call
 * (siw_post_send()), the CPU is held for short_ms before siw_tx_hdt() records
 * it, so that the transmit thread, started on its own CPU by the socket's
 * write space callback, works on the same FPDU meanwhile.
 *
 * A return handler may not sleep: it spins (mdelay), the other CPU serves
 * the peer.  kprobes are GPL-only symbols, hence the dual licence.
 */
#include <linux/delay.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>

static unsigned int delay_ms = 500;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "ms held after each siw_send_mpareqrep() (0: off)");
static unsigned int short_ms;
module_param(short_ms, uint, 0444);
MODULE_PARM_DESC(short_ms, "ms held after a short kernel_sendmsg() of siw_tx_hdt() in a system call (0: off)");

static atomic_t shorts = ATOMIC_INIT(0);

static int widen_reply(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	mdelay(delay_ms);
	return 0;
}

static struct kretprobe reply_probe = {
	.handler = widen_reply,
	.kp.symbol_name = "siw_send_mpareqrep",
	.maxactive = 8,
};

/* kernel_sendmsg(sock, msg, vec, num, size): the size asked for, kept for the return. */
struct sendmsg_call {
	size_t size;
};

static int sendmsg_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	((struct sendmsg_call *)ri->data)->size = (size_t)regs_get_kernel_argument(regs, 4);
	return 0;
}

static int widen_short(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	int rv = (int)regs_return_value(regs); /* (kernel_sendmsg returns an int: -EAGAIN, or octets) */
	char caller[KSYM_SYMBOL_LEN];

	if (current->flags & PF_KTHREAD || (rv >= 0 && (size_t)rv >= ((struct sendmsg_call *)ri->data)->size))
		return 0;
	sprint_symbol_no_offset(caller, get_kretprobe_retaddr(ri));
	if (strncmp(caller, "siw_tx_hdt", 10) != 0)
		return 0;
	if (atomic_inc_return(&shorts) <= 3)
		pr_info("siw-widen: short send of siw_tx_hdt in a system call: %d of %zu, held %u ms\n",
			rv, ((struct sendmsg_call *)ri->data)->size, short_ms);
	mdelay(short_ms);
	return 0;
}

static struct kretprobe short_probe = {
	.entry_handler = sendmsg_entry,
	.handler = widen_short,
	.data_size = sizeof(struct sendmsg_call),
	.kp.symbol_name = "kernel_sendmsg",
	.maxactive = 64,
};

static int __init widen_init(void)
{
	int rc;

	if (delay_ms && (rc = register_kretprobe(&reply_probe)) < 0) {
		pr_err("siw-widen: cannot probe siw_send_mpareqrep (siw loaded?): %d\n", rc);
		return rc;
	}
	if (short_ms && (rc = register_kretprobe(&short_probe)) < 0) {
		pr_err("siw-widen: cannot probe kernel_sendmsg: %d\n", rc);
		if (delay_ms)
			unregister_kretprobe(&reply_probe);
		return rc;
	}
	pr_info("siw-widen: %u ms after siw_send_mpareqrep(), %u ms after a short send\n", delay_ms,
		short_ms);
	return 0;
}

static void __exit widen_exit(void)
{
	if (short_ms)
		unregister_kretprobe(&short_probe);
	if (delay_ms)
		unregister_kretprobe(&reply_probe);
	pr_info("siw-widen: %d short sends held\n", atomic_read(&shorts));
}

module_init(widen_init);
module_exit(widen_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("Widens two race windows of siw (a test aid for kpatch/linux 0003 and 0005)");
