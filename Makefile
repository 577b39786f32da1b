# SPDX-License-Identifier: GPL-2.0
#
# rtrs-client-rs: user entry points. Kbuild (the file next to this one) holds
# the module's build rules; this Makefile only drives it and the test bed.
#
#   make                       build rtrs-client-rs.ko (KDIR defaults to the cached test kernel)
#   make KDIR=<build tree>     build against any Rust-enabled 6.12 build tree
#   make setup                 install packages, rust-src and bindgen (idempotent)
#   make kernel                build or reuse the cached kernel (FLAVOUR=test|perf)
#   make vm CMD='<command>'    run a command as root in the test VM; exits with its status
#   make check                 all tests (host and VM), TAP, summary line
#   make demo                  the main job: boot the VM, map rnbd, show this module
#   make host-test             cargo test of rtrs_core
#   make bench                 4k randread QD32: C client vs this module, same VM boot

FLAVOUR ?= test
export FLAVOUR
CACHED_KDIR = $(shell bash -c '. scripts/kernel-env.sh && echo $$KDIR_BUILT')
KDIR ?= $(if $(wildcard $(CACHED_KDIR)/.config),$(CACHED_KDIR),/lib/modules/$(shell uname -r)/build)

.PHONY: all modules clean setup kernel vm check demo host-test bench

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 clean
	rm -f bindings/rdma_generated.rs bindings/.rdma_generated.rs.cmd

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
	scripts/run-tests.sh

demo:
	scripts/demo.sh

host-test:
	cargo test --workspace

bench:
	scripts/bench.sh
