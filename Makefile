# SPDX-License-Identifier: GPL-2.0
#
# rtrs-client-rs: user entry points. Kbuild (the file next to this one) holds
# the module's build rules; this Makefile only drives it and the test bed.
#
#   make                       build rtrs-client-rs.ko (KDIR: the cached test kernel,
#                              else /lib/modules/$(uname -r)/build); checks KDIR first
#   make KDIR=<build tree>     build against any Rust-enabled 6.12 build tree
#   make install               install the module into KDIR's kernel (extra/), run depmod,
#                              and install the modprobe.d file that puts it under rnbd
#                              (INSTALL_MOD_PATH=<root> installs into a staging root)
#   make uninstall             remove both again
#   make dkms-install          register, build and install with DKMS (rebuilt for each
#                              new Rust-enabled 6.12 kernel), plus the modprobe.d file
#   make dkms-uninstall        remove it from DKMS and the modprobe.d file
#   make setup                 install packages, rust-src and bindgen (idempotent)
#   make kernel                build or reuse the cached kernel (FLAVOUR=test|perf)
#   make vm CMD='<command>'    run a command as root in the test VM; exits with its status
#   make check                 lint gates, host tests and the quick VM tier: TAP, summary line
#   make check-full            the same with every VM scenario at full length
#   make lint                  rustfmt, clippy (rtrs_core and the module), shellcheck,
#                              the layering and the count of unsafe blocks
#   make demo                  the main job: boot the VM, map rnbd, show this module
#   make host-test             cargo test of rtrs_core
#   make test-tools            the VM tests' helpers: the hostile RTRS server (user space)
#                              and the API consumer modules (tests/hostile, tests/consumer,
#                              tests/consumer-rs: the Rust API's example; after `make`),
#                              and rnbd-client-rs (rnbd_clt, work in progress)
#   make bench                 C client vs this module on the perf kernel, one VM boot:
#                              the matrix, CPU per IO, paths, failover stall, memory,
#                              then each client's instructions per IO in a boot of its
#                              own (BENCH=quick: a short run; BENCH_INSN=0: no insn boot)

FLAVOUR ?= test
export FLAVOUR

# The Rust toolchain: rustup's, also for root under sudo (the invoking user's);
# a DKMS copy in /usr/src carries the absolute paths it was registered with
# (toolchain.mk, written by dkms-install), since DKMS runs with root's plain
# environment, also from a kernel package's hooks.
-include toolchain.mk
ifneq ($(SUDO_USER),)
SUDO_HOME := $(shell getent passwd $(SUDO_USER) | cut -d: -f6)
export PATH := $(SUDO_HOME)/.cargo/bin:$(PATH)
export RUSTUP_HOME ?= $(SUDO_HOME)/.rustup
endif
export PATH := $(HOME)/.cargo/bin:$(PATH)
RUSTC ?= rustc
BINDGEN ?= bindgen
export RUSTC BINDGEN
DEPMOD ?= /sbin/depmod

CACHED_KDIR = $(shell bash -c '. scripts/kernel-env.sh && echo $$KDIR_BUILT' 2>/dev/null)
KDIR ?= $(if $(wildcard $(CACHED_KDIR)/.config),$(CACHED_KDIR),/lib/modules/$(shell uname -r)/build)
KRELEASE = $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 RUSTC=$(RUSTC) BINDGEN=$(BINDGEN)

PACKAGE_NAME := rtrs-client-rs
PACKAGE_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
# A staging root, made absolute: the kernel's make runs in KDIR.
INSTALL_ROOT := $(if $(INSTALL_MOD_PATH),$(abspath $(INSTALL_MOD_PATH)))
MODPROBE_CONF := $(INSTALL_ROOT)/etc/modprobe.d/rtrs-client-rs.conf
DKMS_SRC := /usr/src/$(PACKAGE_NAME)-$(PACKAGE_VERSION)

.PHONY: all modules check-kdir check-tree clean install uninstall dkms-install dkms-uninstall \
	setup kernel vm check check-full lint demo host-test bench test-tools

all: modules

check-kdir:
	@scripts/check-kdir.sh "$(KDIR)"

# The tree without the tools (install and uninstall build nothing).
check-tree:
	@scripts/check-kdir.sh --no-tools "$(KDIR)"

modules: check-kdir
	$(KMAKE) modules

clean:
	$(KMAKE) clean
	rm -f bindings/rdma_generated.rs bindings/.rdma_generated.rs.cmd

# Installs what `make` built (it does not rebuild, as modules_install), into
# KDIR's kernel only.
install: check-tree
	@test -f $(PACKAGE_NAME).ko || { echo "install: no $(PACKAGE_NAME).ko; run make KDIR=$(KDIR) first" >&2; exit 1; }
	@v=$$(/sbin/modinfo -F vermagic $(PACKAGE_NAME).ko | cut -d' ' -f1); [ "$$v" = "$(KRELEASE)" ] || \
	 { echo "install: $(PACKAGE_NAME).ko was built for $$v, not for KDIR's $(KRELEASE); run make KDIR=$(KDIR) first" >&2; exit 1; }
	$(KMAKE) INSTALL_MOD_DIR=extra INSTALL_MOD_PATH=$(INSTALL_ROOT) modules_install
	$(DEPMOD) $(if $(INSTALL_ROOT),-b $(INSTALL_ROOT)) -a $(KRELEASE)
	install -D -m 0644 modprobe.d/rtrs-client-rs.conf $(MODPROBE_CONF)

uninstall: check-tree
	rm -f $(INSTALL_ROOT)/lib/modules/$(KRELEASE)/extra/$(PACKAGE_NAME).ko*
	$(DEPMOD) $(if $(INSTALL_ROOT),-b $(INSTALL_ROOT)) -a $(KRELEASE)
	rm -f $(MODPROBE_CONF)

# DKMS builds from a copy in /usr/src, which records the commit it came from
# and the toolchain. A second dkms-install replaces the first.
dkms-install: check-kdir
	-dkms remove -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) --all >/dev/null 2>&1
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)
	git ls-files -z | xargs -0 cp --parents -t $(DKMS_SRC)
	scripts/source-version.sh . > $(DKMS_SRC)/.source-version
	printf 'RUSTC := %s\nBINDGEN := %s\n' "$$($(RUSTC) --print sysroot)/bin/rustc" \
		"$$(command -v $(BINDGEN))" > $(DKMS_SRC)/toolchain.mk
	dkms add -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION)
	dkms build -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) -k $(KRELEASE) --kernelsourcedir $(KDIR)
	dkms install -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) -k $(KRELEASE) --kernelsourcedir $(KDIR)
	install -D -m 0644 modprobe.d/rtrs-client-rs.conf $(MODPROBE_CONF)

dkms-uninstall:
	-dkms remove -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) --all
	rm -rf $(DKMS_SRC)
	rm -f $(MODPROBE_CONF)

setup:
	scripts/setup.sh

kernel:
	scripts/build-kernel.sh

# GNU make itself can only exit 0, 1 or 2: `make vm` exits 0 when the command
# succeeds and 2 otherwise, after printing the command's status.
# scripts/vm-run.sh (which this calls) exits with the exact status.
vm:
	@scripts/vm-run.sh "$(CMD)"; rc=$$?; \
	 if [ $$rc -ne 0 ]; then echo "make vm: command exited with status $$rc" >&2; fi; exit $$rc

check:
	RTRS_TIER=quick scripts/run-tests.sh

check-full:
	RTRS_TIER=full scripts/run-tests.sh

lint:
	bash tests/host/lint.sh

demo:
	scripts/demo.sh

host-test:
	cargo test --workspace

test-tools:
	$(MAKE) -C tests/hostile
	$(MAKE) -C tests/consumer KDIR=$(KDIR)
	$(MAKE) -C tests/consumer-rs KDIR=$(KDIR)
	$(MAKE) -C rnbd_clt KDIR=$(KDIR)

bench:
	scripts/bench.sh
