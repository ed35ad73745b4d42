/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ISNGUARD_BPF_COMPILER_H
#define ISNGUARD_BPF_COMPILER_H

#ifndef __maybe_unused
#define __maybe_unused __attribute__((unused))
#endif

/* Whether a __weak kfunc exists in the running kernel (libbpf 1.1 lacks the macro). */
#ifndef bpf_ksym_exists
#define bpf_ksym_exists(sym) (!!(sym))
#endif

#endif /* ISNGUARD_BPF_COMPILER_H */
