/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What tests/bpf/resend_fill.bpf.c takes (its global `fill`), for the tests
 * and the bench that run it. Either side includes its __u32/__u64 first.
 */
#ifndef ISNGUARD_TESTS_RESEND_FILL_H
#define ISNGUARD_TESTS_RESEND_FILL_H

struct resend_fill_args {
	__u32 first;	/* index of the first tuple (RESEND_FILL_REMOTE_ADDR) */
	__u32 count;
	__u64 age_ns;	/* how long ago their first SYN went */
	__u32 made;	/* out: flows made, each with its resend record */
	__u32 untracked;	/* out: flows made whose record was refused */
};

/*
 * Flow n: the client 10.(201 + n / 65536).(n / 256 % 256).(n % 256):40000,
 * through the translate path to the server 10.200.0.1:80, which has not
 * answered isnguard's SYN (seq RESEND_FILL_ISN).
 */
#define RESEND_FILL_LOCAL_ADDR { 10, 200, 0, 1 }
#define RESEND_FILL_REMOTE_ADDR(n) { 10, (__u8)(201 + ((n) >> 16)), (__u8)((n) >> 8), (__u8)(n) }
#define RESEND_FILL_LOCAL_PORT 80
#define RESEND_FILL_REMOTE_PORT 40000
#define RESEND_FILL_ISN 0x1e5e0d00u

#endif /* ISNGUARD_TESTS_RESEND_FILL_H */
