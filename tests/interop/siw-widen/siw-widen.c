// SPDX-License-Identifier: MIT OR GPL-2.0-only
/*
 * siw-widen: a test aid for kpatch/linux 0003, siw's accept race, loaded in
 * the interop guest only.  siw_accept() moves the QP to RTS, sends the MPA
 * Reply (siw_send_mpareqrep()) and only then gives the socket's upcalls to the
 * QP: an FPDU that arrives in between wakes the connection manager, which
 * ignores it, and stays unread.  That window is microseconds wide, so siw as
 * shipped hangs now and then, not on demand.  This module holds the CPU for
 * delay_ms when siw_send_mpareqrep() returns (a Request's too): an initiator
 * that sends its first FPDU as soon as it has the Reply (rping's client) then
 * lands in the window every time on siw as shipped, and never with the patch,
 * which moves the upcalls before the Reply.  kprobes are GPL-only symbols,
 * hence the dual licence.
 */
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>

static unsigned int delay_ms = 500;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "milliseconds held after each siw_send_mpareqrep()");

static int widen(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	mdelay(delay_ms); /* (a return handler may not sleep: the other CPU serves the peer) */
	return 0;
}

static struct kretprobe probe = {
	.handler = widen,
	.kp.symbol_name = "siw_send_mpareqrep",
	.maxactive = 8,
};

static int __init widen_init(void)
{
	int rc = register_kretprobe(&probe);

	if (rc < 0)
		pr_err("siw-widen: cannot probe siw_send_mpareqrep (siw loaded?): %d\n", rc);
	else
		pr_info("siw-widen: %u ms after every siw_send_mpareqrep()\n", delay_ms);
	return rc;
}

static void __exit widen_exit(void)
{
	unregister_kretprobe(&probe);
}

module_init(widen_init);
module_exit(widen_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("Widens siw's accept window (a test aid for kpatch/linux 0003)");
