/*
 * A QEMU TCG plugin (QEMU 7.2, plugin API version 1): exact counts of the
 * guest kernel's executed instructions by address, for the bench's insn
 * section (scripts/bench-vm.sh sec_insn, scripts/bench-insn.py).
 *
 *   qemu-system-x86_64 ... -plugin /path/qemu-insn-count.so,out=/path/dump.txt
 *
 * Every instruction at a kernel address (>= 0xffff800000000000) gets an
 * execution callback that adds one to its own counter for the vCPU that runs
 * it (one slot per vCPU: no lost updates under multi-threaded TCG, no atomics).
 * Counters are keyed by (address, class), class from the instruction's bytes:
 * a call (E8, FF /2) or a locked instruction (F0 prefix, or XCHG with a
 * memory operand, which the CPU locks by itself).
 *
 * The guest drives it with a magic no-op that any program can run (user space
 * included), scripts/insn-mark.c:
 *   nopw 0x4b4d5200+cmd(%rax,%rax,1) = 66 0f 1f 84 00 <disp32>
 *   cmd 1: set all counters to zero
 *   cmd 2: append a dump to the out= file:
 *            # dump <seq>
 *            <addr hex> <count> <calls> <locked>    (addresses with count > 0)
 *            # end <seq> <lines>
 *   a reset also appends "# reset <seq>" (seq: the number of the next dump).
 *
 * Built without QEMU's header (Debian ships none): the few declarations it
 * uses are copied from QEMU 7.2's include/qemu/qemu-plugin.h below.
 *   gcc -shared -fPIC -O2 -o qemu-insn-count.so qemu-insn-count.c -lpthread
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- from QEMU 7.2 include/qemu/qemu-plugin.h (API version 1) ---- */
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);
/* ---- end of the copied declarations ---- */

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define KERNEL_START 0xffff800000000000ULL
#define MAGIC 0x4b4d5200u
#define MAX_VCPUS 8 /* slots per counter; vCPUs beyond share the last one, atomically */
#define CLASS_CALL 1u
#define CLASS_LOCK 2u

struct rec {
	uint64_t vaddr;
	uint32_t class;
	struct rec *next; /* hash chain */
	struct rec *all;  /* list of all records, for reset and dump */
	uint64_t cnt[MAX_VCPUS];
};

#define HBITS 18
static struct rec *table[1u << HBITS];
static struct rec *all_recs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static unsigned long dump_seq = 1;

static unsigned int hash(uint64_t va, uint32_t class)
{
	uint64_t h = (va ^ ((uint64_t)class << 60)) * 0x9e3779b97f4a7c15ULL;
	return (unsigned int)(h >> (64 - HBITS));
}

/* The record of (va, class), made on first use; under lock. */
static struct rec *rec_get(uint64_t va, uint32_t class)
{
	unsigned int h = hash(va, class);
	struct rec *r;

	for (r = table[h]; r; r = r->next)
		if (r->vaddr == va && r->class == class)
			return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		abort();
	r->vaddr = va;
	r->class = class;
	r->next = table[h];
	table[h] = r;
	r->all = all_recs;
	all_recs = r;
	return r;
}

/* The class of an instruction from its bytes. */
static uint32_t classify(const uint8_t *b, size_t n)
{
	size_t i = 0;
	bool lock_prefix = false;

	/* Legacy prefixes, then REX. */
	for (; i < n; i++) {
		uint8_t p = b[i];
		if (p == 0xf0)
			lock_prefix = true;
		else if (!(p == 0xf2 || p == 0xf3 || p == 0x2e || p == 0x36 || p == 0x3e ||
			   p == 0x26 || p == 0x64 || p == 0x65 || p == 0x66 || p == 0x67))
			break;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= n)
		return lock_prefix ? CLASS_LOCK : 0;
	uint8_t op = b[i];
	if (lock_prefix)
		return CLASS_LOCK;
	if (op == 0xe8)
		return CLASS_CALL;
	if (op == 0xff && i + 1 < n && ((b[i + 1] >> 3) & 7) == 2)
		return CLASS_CALL;
	/* XCHG r/m, r with a memory operand (mod != 3): locked implicitly. */
	if ((op == 0x86 || op == 0x87) && i + 1 < n && (b[i + 1] >> 6) != 3)
		return CLASS_LOCK;
	return 0;
}

static void count_exec(unsigned int vcpu, void *udata)
{
	struct rec *r = udata;

	if (vcpu < MAX_VCPUS - 1)
		r->cnt[vcpu]++;
	else
		__atomic_fetch_add(&r->cnt[MAX_VCPUS - 1], 1, __ATOMIC_RELAXED);
}

static void do_reset(void)
{
	struct rec *r;

	pthread_mutex_lock(&lock);
	for (r = all_recs; r; r = r->all)
		memset(r->cnt, 0, sizeof(r->cnt));
	if (out) {
		fprintf(out, "# reset %lu\n", dump_seq);
		fflush(out);
	}
	pthread_mutex_unlock(&lock);
}

/*
 * The counters are read first, in one quick pass, then written: the other
 * vCPUs keep running while the file is written. The reader sums the classes
 * of one address.
 */
struct snap {
	uint64_t vaddr, count;
	uint32_t class;
};

static void do_dump(void)
{
	struct rec *r;
	struct snap *s = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&lock);
	for (r = all_recs; r; r = r->all) {
		uint64_t c = 0;
		for (int i = 0; i < MAX_VCPUS; i++)
			c += __atomic_load_n(&r->cnt[i], __ATOMIC_RELAXED);
		if (!c)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			s = realloc(s, cap * sizeof(*s));
			if (!s)
				abort();
		}
		s[n].vaddr = r->vaddr;
		s[n].count = c;
		s[n].class = r->class;
		n++;
	}
	if (out) {
		fprintf(out, "# dump %lu\n", dump_seq);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s[i].vaddr,
				s[i].count, (s[i].class & CLASS_CALL) ? s[i].count : 0,
				(s[i].class & CLASS_LOCK) ? s[i].count : 0);
		fprintf(out, "# end %lu %zu\n", dump_seq, n);
		fflush(out);
	}
	dump_seq++;
	pthread_mutex_unlock(&lock);
	free(s);
}

static void magic_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	switch ((uintptr_t)udata) {
	case 1:
		do_reset();
		break;
	case 2:
		do_dump();
		break;
	}
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	(void)id;

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		const uint8_t *b = qemu_plugin_insn_data(insn);
		size_t sz = qemu_plugin_insn_size(insn);

		if (sz == 9 && b[0] == 0x66 && b[1] == 0x0f && b[2] == 0x1f && b[3] == 0x84 &&
		    b[4] == 0x00) {
			uint32_t disp = (uint32_t)b[5] | (uint32_t)b[6] << 8 | (uint32_t)b[7] << 16 |
					(uint32_t)b[8] << 24;
			if ((disp & 0xffffff00u) == MAGIC) {
				qemu_plugin_register_vcpu_insn_exec_cb(insn, magic_exec,
								       QEMU_PLUGIN_CB_NO_REGS,
								       (void *)(uintptr_t)(disp & 0xff));
				continue;
			}
		}
		if (va < KERNEL_START)
			continue;
		pthread_mutex_lock(&lock);
		struct rec *r = rec_get(va, classify(b, sz));
		pthread_mutex_unlock(&lock);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, count_exec, QEMU_PLUGIN_CB_NO_REGS, r);
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	if (out)
		fclose(out);
	out = NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
					   char **argv)
{
	const char *path = NULL;

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0)
			path = argv[i] + 4;
		else {
			fprintf(stderr, "qemu-insn-count: unknown argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "qemu-insn-count: needs out=<file>\n");
		return -1;
	}
	if (info->system_emulation && info->system.max_vcpus > MAX_VCPUS - 1)
		fprintf(stderr, "qemu-insn-count: %d vCPUs, beyond %d share one atomic slot\n",
			info->system.max_vcpus, MAX_VCPUS - 1);
	out = fopen(path, "a");
	if (!out) {
		perror(path);
		return -1;
	}
	fprintf(out, "# qemu-insn-count %s\n", info->target_name);
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
