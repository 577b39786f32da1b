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
#   make lint                  rustfmt, clippy (rtrs_core and the module) and shellcheck
#   make demo                  the main job: boot the VM, map rnbd, show this module
#   make host-test             cargo test of rtrs_core
#   make bench                 4k randread QD32: C client vs this module, same VM boot

FLAVOUR ?= test
export FLAVOUR
# rustup's tools, where the build scripts and DKMS (as root) find them.
export PATH := $(HOME)/.cargo/bin:$(PATH)
CACHED_KDIR = $(shell bash -c '. scripts/kernel-env.sh && echo $$KDIR_BUILT' 2>/dev/null)
KDIR ?= $(if $(wildcard $(CACHED_KDIR)/.config),$(CACHED_KDIR),/lib/modules/$(shell uname -r)/build)
KRELEASE = $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)

PACKAGE_NAME := rtrs-client-rs
PACKAGE_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
MODPROBE_CONF := $(INSTALL_MOD_PATH)/etc/modprobe.d/rtrs-client-rs.conf
DKMS_SRC := /usr/src/$(PACKAGE_NAME)-$(PACKAGE_VERSION)

.PHONY: all modules check-kdir clean install uninstall dkms-install dkms-uninstall \
	setup kernel vm check check-full lint demo host-test bench

all: modules

check-kdir:
	@scripts/check-kdir.sh "$(KDIR)"

modules: check-kdir
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 clean
	rm -f bindings/rdma_generated.rs bindings/.rdma_generated.rs.cmd

# Installs what `make` built (it does not rebuild, as modules_install).
install: check-kdir
	@test -f $(PACKAGE_NAME).ko || { echo "install: no $(PACKAGE_NAME).ko; run make first" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 INSTALL_MOD_DIR=extra modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a $(KRELEASE)
	install -D -m 0644 modprobe.d/rtrs-client-rs.conf $(MODPROBE_CONF)

uninstall:
	rm -f $(INSTALL_MOD_PATH)/lib/modules/$(KRELEASE)/extra/$(PACKAGE_NAME).ko*
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a $(KRELEASE)
	rm -f $(MODPROBE_CONF)

# DKMS builds from a copy in /usr/src, which records the commit it came from.
dkms-install:
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)
	git ls-files -z | xargs -0 cp --parents -t $(DKMS_SRC)
	scripts/source-version.sh . > $(DKMS_SRC)/.source-version
	dkms add -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION)
	dkms build -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) -k $(KRELEASE)
	dkms install -m $(PACKAGE_NAME) -v $(PACKAGE_VERSION) -k $(KRELEASE)
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

bench:
	scripts/bench.sh
