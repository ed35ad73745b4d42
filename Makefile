# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# isnguard: `make` builds, `sudo make test` runs the suite, `sudo make demo` shows it.
# V=1 prints full commands.

.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

BUILD      ?= build
PREFIX     ?= /usr/local
DESTDIR    ?=
CC         ?= cc
CLANG      ?= clang
BPFTOOL    ?= bpftool
PKG_CONFIG ?= pkg-config

UNAME_M   := $(shell uname -m)
BPF_ARCH  := $(subst x86_64,x86,$(subst aarch64,arm64,$(UNAME_M)))
VMLINUX_H := vmlinux/$(UNAME_M)/vmlinux.h

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARNINGS := -Wall -Wextra
BPF_CFLAGS := -target bpf -O2 -g $(WARNINGS) -D__TARGET_ARCH_$(BPF_ARCH) \
	-I$(dir $(VMLINUX_H)) -Iinclude -Ibpf -mcpu=v3 -MMD -MP
# `make PROFILE=1 BUILD=build-profile`: the datapath times each run by outcome
# (bpf/profile.h), for scripts/bench-conn.sh --outcomes; never a build to ship.
ifeq ($(PROFILE),1)
BPF_CFLAGS += -DISNGUARD_PROFILE
endif
CFLAGS ?= -O2 -g
USER_CFLAGS := $(CFLAGS) $(WARNINGS) -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser -I$(BUILD) -MMD -MP
# Recursively expanded, so `make deps` can install pkg-config files first.
USER_LIBS = $(shell $(PKG_CONFIG) --libs libxdp libbpf libcrypto inih 2>/dev/null || echo -lxdp -lbpf -lelf -lz -lcrypto -linih)
# The exporter's HTTP server and systemd's readiness notification: the CLI alone links them.
CLI_LIBS = $(USER_LIBS) $(shell $(PKG_CONFIG) --libs libmicrohttpd libsystemd 2>/dev/null || echo -lmicrohttpd -lsystemd)

# The CLI: main.c dispatches, one file per command group, ref/ is the OpenSSL reference.
CLI_SRCS := $(wildcard user/*.c) $(wildcard user/ref/*.c)
CLI_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(CLI_SRCS))
# What tests and bench reuse from userspace.
SHARED_OBJS := $(BUILD)/user/ref/isn_ref.o $(BUILD)/user/ref/cookie_ref.o $(BUILD)/user/json_writer.o $(BUILD)/user/parse.o \
	       $(BUILD)/user/local_addrs.o

# BPF objects: the datapath (bpf/*.bpf.c) and test-only programs (tests/bpf/*.bpf.c).
BPF_SRCS := $(wildcard bpf/*.bpf.c) $(wildcard tests/bpf/*.bpf.c)
BPF_OBJS := $(addprefix $(BUILD)/,$(notdir $(BPF_SRCS:.bpf.c=.bpf.o)))
SKELS    := $(BPF_OBJS:.bpf.o=.skel.h)

TEST_SRCS := tests/harness.c tests/bpf_run.c tests/pkt.c tests/dp_fixture.c tests/map_share.c \
	     $(wildcard tests/test_*.c)
TEST_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(TEST_SRCS))
BENCH_FLOOD_SECONDS ?= 5
BENCH_OBJS := $(BUILD)/tests/bench.o $(BUILD)/tests/bpf_run.o $(BUILD)/tests/pkt.o

.PHONY: FORCE all test test-unit test-e2e check-verifier test-kernels bench demo deps install clean vmlinux

all: $(BUILD)/isnguard $(BPF_OBJS) $(SKELS) $(BUILD)/isnguard.8 $(BUILD)/isnguard.bash-completion

# isnguard(8), from the binary's own --help texts (scripts/gen-man.sh).
$(BUILD)/isnguard.8: $(BUILD)/isnguard scripts/gen-man.sh
	$(call msg,MAN,$@)
	$(Q)scripts/gen-man.sh $(BUILD)/isnguard > $@

# The bash completion, from the same option tables as --help (isnguard completion bash).
$(BUILD)/isnguard.bash-completion: $(BUILD)/isnguard
	$(call msg,GEN,$@)
	$(Q)$(BUILD)/isnguard completion bash > $@

$(BUILD) $(BUILD)/user $(BUILD)/user/ref $(BUILD)/tests:
	$(Q)mkdir -p $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.bpf.o: tests/bpf/%.bpf.c $(VMLINUX_H) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(notdir $*) > $@

# version.h: rewritten only when its text changes, so a new commit rebuilds main.o alone.
ISNGUARD_VERSION ?= 0.2
$(BUILD)/version.h: FORCE | $(BUILD)
	$(Q)printf '#define ISNGUARD_VERSION "%s"\n#define ISNGUARD_COMMIT "%s"\n#define ISNGUARD_LIBXDP "%s"\n' \
		'$(ISNGUARD_VERSION)' \
		"$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)" \
		"$$($(PKG_CONFIG) --modversion libxdp 2>/dev/null || echo unknown)" > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD)/user/main.o $(BUILD)/user/exporter.o: $(BUILD)/version.h

FORCE:

$(BUILD)/user/%.o: user/%.c $(SKELS) | $(BUILD)/user $(BUILD)/user/ref
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c $(SKELS) | $(BUILD)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Itests -c $< -o $@

$(BUILD)/isnguard: $(CLI_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(CLI_LIBS)

# test_harness.c runs build/harness_selftest, hence the order-only prerequisite.
$(BUILD)/test_runner: $(TEST_OBJS) $(SHARED_OBJS) | $(BUILD)/harness_selftest
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

# The harness on tests that crash, fail and skip on purpose (tests/harness_selftest.c).
$(BUILD)/harness_selftest: $(BUILD)/tests/harness_selftest.o $(BUILD)/tests/harness.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

# End-to-end traffic tool (tests/e2e): deterministic streams with SHA-256 on both ends.
$(BUILD)/tcp_xfer: tests/e2e/tcp_xfer.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@ -lcrypto

# End-to-end flood generator (tests/e2e): spoofed SYNs or ACKs from a test prefix, bounded.
# LD_PRELOAD shim: wrk's connections from many source addresses (scripts/bench-conn.sh).
$(BUILD)/src_spread.so: tests/e2e/src_spread.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARNINGS) -shared -fPIC -o $@ $< -ldl

$(BUILD)/syn_flood: tests/e2e/syn_flood.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $< -o $@

$(BUILD)/bench_synproxy: $(BUILD)/tests/bench_synproxy.o $(BUILD)/tests/bench_synproxy_env.o \
		$(BUILD)/tests/bench_synproxy_load.o $(BUILD)/tests/pkt.o \
		$(BUILD)/tests/bpf_run.o $(BUILD)/tests/map_share.o $(BUILD)/user/ref/cookie_ref.o $(BUILD)/user/ref/isn_ref.o \
		$(BUILD)/user/local_addrs.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

$(BUILD)/bench_sweeper: $(BUILD)/tests/bench_sweeper.o $(BUILD)/tests/bpf_run.o $(BUILD)/tests/map_share.o \
		$(BUILD)/user/json_writer.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

$(BUILD)/bench_resend: $(BUILD)/tests/bench_resend.o $(BUILD)/tests/bpf_run.o $(BUILD)/tests/map_share.o \
		$(BUILD)/user/json_writer.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

# The least ISN rewriter's loader: bench-conn.sh's floor for the rewrite rows.
$(BUILD)/least_rewrite: $(BUILD)/tests/least_rewrite.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

# The verifier's cost of each program against its budget (make check-verifier).
$(BUILD)/verifier_budget: $(BUILD)/tests/verifier_budget.o $(BUILD)/user/json_writer.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

$(BUILD)/bench: $(BENCH_OBJS) $(SHARED_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(USER_LIBS)

# The Debian packages the build, tests and demo need; installs only what is missing.
deps:
	$(Q)scripts/deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/test_runner $(BUILD)/verifier_budget \
		$(BUILD)/tcp_xfer $(BUILD)/syn_flood
	$(Q)scripts/run-tests.sh $(BUILD)

# The unit layer alone (verifier budget, BPF_PROG_TEST_RUN, CLI, ABI; no namespaces), and the
# end-to-end layer alone.
test-unit: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/test_runner $(BUILD)/verifier_budget
	$(Q)E2E=0 scripts/run-tests.sh $(BUILD)

# Each datapath program loaded alone: instructions processed, states, stack, time, against
# the budget (docs/development.md, "Verifier budget"). CLANG=clang-19 BUILD=build-clang19 for the other compiler.
check-verifier: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD)/isnguard.bpf.o $(BUILD)/verifier_budget
	$(Q)$(BUILD)/verifier_budget $(BUILD)/isnguard.bpf.o

test-e2e: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/tcp_xfer $(BUILD)/syn_flood
	$(Q)UNIT=0 scripts/run-tests.sh $(BUILD)

# The unit suite, the verifier budget table, the CLI and a core of the end-to-end suite on
# Debian 12's own kernel (6.1), booted under qemu.
test-kernels: deps
	$(Q)scripts/deps.sh kernels
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/test_runner $(BUILD)/verifier_budget \
		$(BUILD)/tcp_xfer $(BUILD)/syn_flood
	$(Q)scripts/test-kernels.sh $(BUILD)

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench $(BUILD)/bench_synproxy $(BUILD)/syn_flood \
		$(BUILD)/verifier_budget $(BUILD)/tcp_xfer $(BUILD)/bench_sweeper $(BUILD)/bench_resend \
		$(BUILD)/src_spread.so $(BUILD)/least_rewrite
	$(Q)$(BUILD)/verifier_budget $(BUILD)/isnguard.bpf.o
	$(Q)$(BUILD)/bench $(BENCH_ARGS)
	$(Q)$(BUILD)/bench_synproxy $(BENCH_SYNPROXY_ARGS)
	$(Q)$(BUILD)/bench_sweeper $(filter --json,$(BENCH_ARGS)) $(BENCH_SWEEPER_ARGS)
	$(Q)$(BUILD)/bench_resend $(filter --json,$(BENCH_ARGS))
	$(Q)scripts/bench-synflood.sh $(BUILD) $(BENCH_FLOOD_SECONDS)
	$(Q)scripts/bench-synflood.sh --gateway $(BUILD) $(BENCH_FLOOD_SECONDS)
	$(Q)scripts/bench-conn.sh $(filter --json,$(BENCH_ARGS)) $(BENCH_CONN_ARGS) $(BUILD)

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench $(BUILD)/test_runner $(BUILD)/tcp_xfer \
		$(BUILD)/syn_flood
	$(Q)scripts/demo.sh $(BUILD)

# PREFIX=/usr for a system install; DESTDIR for a package root. The sample
# config goes to SYSCONFDIR (the path the binary reads) only where none is.
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
install: all
	$(Q)install -D -m 0755 $(BUILD)/isnguard $(DESTDIR)$(PREFIX)/sbin/isnguard
	$(Q)install -D -m 0644 $(BUILD)/isnguard.8 $(DESTDIR)$(PREFIX)/share/man/man8/isnguard.8
	$(Q)install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	$(Q)sed 's|@SBINDIR@|$(PREFIX)/sbin|g' contrib/isnguard@.service.in \
		> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard@.service
	$(Q)chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard@.service
	$(Q)sed 's|@SBINDIR@|$(PREFIX)/sbin|g' contrib/isnguard.service.in \
		> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard.service
	$(Q)chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard.service
	$(Q)sed 's|@SBINDIR@|$(PREFIX)/sbin|g' contrib/isnguard-exporter.service.in \
		> $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard-exporter.service
	$(Q)chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/isnguard-exporter.service
	$(Q)install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/isnguard
	$(Q)[ -e $(DESTDIR)$(SYSCONFDIR)/isnguard/isnguard.conf ] || \
		{ $(BUILD)/isnguard config example > $(DESTDIR)$(SYSCONFDIR)/isnguard/isnguard.conf && \
		  chmod 0644 $(DESTDIR)$(SYSCONFDIR)/isnguard/isnguard.conf; }
	$(Q)install -D -m 0644 $(BUILD)/isnguard.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/isnguard
	$(Q)install -D -m 0644 contrib/prometheus/isnguard.rules.yml \
		$(DESTDIR)$(PREFIX)/share/isnguard/prometheus/isnguard.rules.yml
	$(Q)install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/isnguard/README.md
	$(Q)install -d $(DESTDIR)$(PREFIX)/share/doc/isnguard/docs
	$(Q)install -m 0644 docs/*.md $(DESTDIR)$(PREFIX)/share/doc/isnguard/docs/

# Regenerate vmlinux.h from the running kernel's BTF (docs/development.md, "Build": when to).
vmlinux:
	$(Q)mkdir -p $(dir $(VMLINUX_H))
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H).tmp
	$(Q)mv $(VMLINUX_H).tmp $(VMLINUX_H)
	@echo "  GEN      $(VMLINUX_H)"

$(VMLINUX_H):
	@echo "no $(VMLINUX_H) for this architecture: run 'make vmlinux' on a kernel with BTF" >&2
	@false

clean:
	$(Q)rm -rf $(BUILD)

-include $(wildcard $(BUILD)/*.d $(BUILD)/user/*.d $(BUILD)/user/ref/*.d $(BUILD)/tests/*.d)
