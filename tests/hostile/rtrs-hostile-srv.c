// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rtrs-hostile-srv: a user-space RTRS (wire protocol 2.0) test server.
 *
 * It implements enough of the server side of RTRS for a kernel rtrs-client
 * to open sessions, exchange INFO, heartbeat and run READ/WRITE IO against
 * it ("--case good").  Every other case breaks the protocol in one specific
 * way, so a test can watch how the client copes.  See README.md or --help.
 *
 * One thread: a poll() loop over the rdma_cm event channel and one
 * completion channel per RDMA device.  Each connection has its own send and
 * receive CQ, all connections of a device share one PD.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Protocol constants (see rtrs-digest.md section 2) */
#define RTRS_MAGIC		0x1BBD
#define RTRS_PROTO_VER		0x0200
#define RTRS_VER_MAJOR		2
#define CONN_PRIV_LEN		56
#define INFO_REQ_LEN		272
#define SERVICE_QD		512
#define MAX_CID_NUM		4096
#define HB_INTERVAL_MS		5000

enum { MSG_INFO_REQ, MSG_INFO_RSP, MSG_WRITE, MSG_READ, MSG_RKEY_RSP };

#define NEED_INVAL_F		(1u << 0)
#define NEW_RKEY_F		(1u << 1)

enum {
	IMM_IO_REQ	= 0,
	IMM_IO_RSP	= 1,
	IMM_IO_RSP_W_INV = 2,
	IMM_HB_MSG	= 8,
	IMM_HB_ACK	= 9,
};

#define IMM_PAYL_MASK		0x0fffffffu

/* Server side limits of this program */
#define TX_SLOT			64		/* bytes per small send buffer */
#define MAX_BACKED		(256ul << 20)	/* largest chunk area we allocate */
#define MAX_DEVS		16
#define SQ_WAIT_MS		2000
#define INFO_LATE_MS		35000		/* client waits 30 s for INFO_RSP */
#define FLOOD_COUNT		20000
#define UNSOL_ACK_MS		100

/* wr_id values */
enum { WRID_EMPTY = 1, WRID_INFO, WRID_SEND };

/* ------------------------------------------------------------------ */
/* Cases                                                                */

enum hcase {
	C_GOOD,
	/* connect phase */
	C_REJECT_NOPRIVDATA, C_REJECT_SHORT, C_REJECT_ENOMEM, C_REJECT_EBUSY,
	C_REJECT_ERRNO0, C_REJECT_POSITIVE, C_REJECT_CID1,
	C_RSP_BAD_MAGIC, C_RSP_BAD_VERSION, C_RSP_MINOR_VERSION, C_RSP_ERRNO,
	C_RSP_SHORT, C_RSP_QD0, C_RSP_QD_MAX, C_RSP_MAXIO0,
	C_RSP_MAXIO_MISALIGNED, C_RSP_MAXIO_HUGE, C_RSP_HDR0,
	C_RSP_CHUNK_OVERFLOW, C_RSP_QD_CHANGES, C_RSP_FLAGS_JUNK,
	C_NO_ACCEPT, C_DISC_AFTER_ACCEPT_CID0, C_DISC_AT_CID1,
	/* INFO phase */
	C_INFO_NONE, C_INFO_WRONG_TYPE, C_INFO_SHORT, C_INFO_SG0,
	C_INFO_SG_ABOVE_QD, C_INFO_SG_INDIVISIBLE, C_INFO_DESC_LEN0,
	C_INFO_DESC_MISALIGNED, C_INFO_DESC_SHORT, C_INFO_DESC_OVERFLOW,
	C_INFO_TOO_BIG, C_INFO_TWICE, C_INFO_DISCONNECT, C_INFO_SESSNAME,
	C_INFO_LATE,
	/* IO phase */
	C_IO_IMM_UNKNOWN, C_IO_MSGID_BEYOND, C_IO_RSP_NOT_INFLIGHT,
	C_IO_RSP_TWICE, C_IO_ERRNO_RANGE, C_IO_ERRNO_EIO, C_IO_NO_ANSWER,
	C_IO_DISCONNECT, C_IO_RSP_ON_CID0, C_IO_SEND_UNEXPECTED,
	C_IO_SEND_EMPTY, C_IO_BIG_SEND, C_IO_NO_REMOTE_INV,
	C_IO_WINV_NO_SEND,
	C_RKEY_BAD_BUFID, C_RKEY_SHORT, C_RKEY_WRONG_TYPE,
	/* heartbeat */
	C_HB_FLOOD, C_HB_ACK_UNSOLICITED, C_HB_SILENT, C_HB_ON_IO_CON,
	NR_CASES
};

struct case_desc {
	const char *name;
	const char *phase;
	const char *what;
};

static const struct case_desc cases[NR_CASES] = {
	[C_GOOD] = { "good", "-", "correct minimal server (control)" },
	[C_REJECT_NOPRIVDATA] = { "reject-noprivdata", "connect",
		"rdma_reject with no private data" },
	[C_REJECT_SHORT] = { "reject-short", "connect",
		"rdma_reject with 10 bytes (magic, version, errno -EINVAL)" },
	[C_REJECT_ENOMEM] = { "reject-enomem", "connect",
		"reject, conn_rsp errno -ENOMEM" },
	[C_REJECT_EBUSY] = { "reject-ebusy", "connect",
		"reject, conn_rsp errno -EBUSY" },
	[C_REJECT_ERRNO0] = { "reject-errno0", "connect",
		"reject, conn_rsp errno 0" },
	[C_REJECT_POSITIVE] = { "reject-positive", "connect",
		"reject, conn_rsp errno +5" },
	[C_REJECT_CID1] = { "reject-cid1", "connect",
		"accept cid 0, reject cid 1 with -ECONNRESET" },
	[C_RSP_BAD_MAGIC] = { "rsp-bad-magic", "connect",
		"accept, conn_rsp magic 0xBD1B (byte-swapped)" },
	[C_RSP_BAD_VERSION] = { "rsp-bad-version", "connect",
		"accept, conn_rsp version 3.0" },
	[C_RSP_MINOR_VERSION] = { "rsp-minor-version", "connect",
		"accept, conn_rsp version 2.9 (control: must work)" },
	[C_RSP_ERRNO] = { "rsp-errno", "connect",
		"accept, conn_rsp errno -EIO" },
	[C_RSP_SHORT] = { "rsp-short", "connect",
		"accept with 20 bytes of private data (IB CM pads it)" },
	[C_RSP_QD0] = { "rsp-qd0", "connect", "accept, queue_depth 0" },
	[C_RSP_QD_MAX] = { "rsp-qd-max", "connect",
		"accept, queue_depth 65535" },
	[C_RSP_MAXIO0] = { "rsp-maxio0", "connect", "accept, max_io_size 0" },
	[C_RSP_MAXIO_MISALIGNED] = { "rsp-maxio-misaligned", "connect",
		"accept, max_io_size 4097" },
	[C_RSP_MAXIO_HUGE] = { "rsp-maxio-huge", "connect",
		"accept, max_io_size 0xfffff000" },
	[C_RSP_HDR0] = { "rsp-hdr0", "connect", "accept, max_hdr_size 0" },
	[C_RSP_CHUNK_OVERFLOW] = { "rsp-chunk-overflow", "connect",
		"accept, max_io_size 0xffffffff + max_hdr_size 4096" },
	[C_RSP_QD_CHANGES] = { "rsp-qd-changes", "connect",
		"a path's later sessions (reconnects) get a different queue_depth" },
	[C_RSP_FLAGS_JUNK] = { "rsp-flags-junk", "connect",
		"accept, unknown conn_rsp flag bits set (control: must work)" },
	[C_NO_ACCEPT] = { "no-accept", "connect",
		"never answer connect requests" },
	[C_DISC_AFTER_ACCEPT_CID0] = { "disconnect-after-accept-cid0", "connect",
		"disconnect cid 0 as soon as it is ESTABLISHED" },
	[C_DISC_AT_CID1] = { "disconnect-at-cid1", "connect",
		"accept cid 1, then disconnect the session (cid 0 at once, cid 1 when established)" },
	[C_INFO_NONE] = { "info-none", "info", "never answer INFO_REQ" },
	[C_INFO_WRONG_TYPE] = { "info-wrong-type", "info",
		"INFO_RSP with type 0" },
	[C_INFO_SHORT] = { "info-short", "info", "INFO_RSP of 4 bytes" },
	[C_INFO_SG0] = { "info-sg0", "info", "INFO_RSP with sg_cnt 0" },
	[C_INFO_SG_ABOVE_QD] = { "info-sg-above-qd", "info",
		"INFO_RSP sg_cnt qd+1, qd descriptors sent" },
	[C_INFO_SG_INDIVISIBLE] = { "info-sg-indivisible", "info",
		"INFO_RSP sg_cnt not dividing qd (3 for qd 16)" },
	[C_INFO_DESC_LEN0] = { "info-desc-len0", "info",
		"INFO_RSP descriptor 0 has len 0" },
	[C_INFO_DESC_MISALIGNED] = { "info-desc-misaligned", "info",
		"INFO_RSP descriptor len not a multiple of chunk_size" },
	[C_INFO_DESC_SHORT] = { "info-desc-short", "info",
		"INFO_RSP descriptors cover qd-1 chunks" },
	[C_INFO_DESC_OVERFLOW] = { "info-desc-overflow", "info",
		"INFO_RSP descriptor addr 0xffffffffffff0000, len qd*chunk" },
	[C_INFO_TOO_BIG] = { "info-too-big", "info",
		"INFO_RSP SEND of 8+16*(qd+64) bytes (client buffer is 8+16*qd)" },
	[C_INFO_TWICE] = { "info-twice", "info", "send INFO_RSP twice" },
	[C_INFO_DISCONNECT] = { "info-disconnect", "info",
		"disconnect the session instead of answering INFO_REQ" },
	[C_INFO_SESSNAME] = { "info-sessname", "info",
		"disconnect if sessname != --expect-sess (name clash)" },
	[C_INFO_LATE] = { "info-late", "info",
		"answer INFO_REQ after 35 s (client waits 30 s)" },
	[C_IO_IMM_UNKNOWN] = { "io-imm-unknown", "io",
		"answer each request with IMM type 5" },
	[C_IO_MSGID_BEYOND] = { "io-msgid-beyond", "io",
		"answer each request with msg_id qd+3" },
	[C_IO_RSP_NOT_INFLIGHT] = { "io-rsp-not-inflight", "io",
		"first a response for (msg_id+1)%qd, then the right one" },
	[C_IO_RSP_TWICE] = { "io-rsp-twice", "io",
		"every response IMM sent twice" },
	[C_IO_ERRNO_RANGE] = { "io-errno-range", "io",
		"every response has errno field 0x1ff" },
	[C_IO_ERRNO_EIO] = { "io-errno-eio", "io",
		"every request fails with -EIO (control: clean errors)" },
	[C_IO_NO_ANSWER] = { "io-no-answer", "io",
		"never answer IO requests, still ack heartbeats" },
	[C_IO_DISCONNECT] = { "io-disconnect", "io",
		"disconnect the request's connection instead of answering" },
	[C_IO_RSP_ON_CID0] = { "io-rsp-on-cid0", "io",
		"answer on cid 0 instead of the request's connection" },
	[C_IO_SEND_UNEXPECTED] = { "io-send-unexpected", "io",
		"after INFO, a plain 64-byte SEND on cid 0" },
	[C_IO_SEND_EMPTY] = { "io-send-empty", "io",
		"after INFO, a plain zero-length SEND on cid 0 (fits any receive)" },
	[C_IO_BIG_SEND] = { "io-big-send", "io",
		"responses as a 64-byte SEND_WITH_IMM (client buffers: 0 or 8 bytes)" },
	[C_IO_NO_REMOTE_INV] = { "io-no-remote-inv", "io",
		"READ with NEED_INVAL answered IO_RSP without SEND_WITH_INV (control)" },
	[C_IO_WINV_NO_SEND] = { "io-winv-no-send", "io",
		"IO_RSP_W_INV without the SEND_WITH_INV before it" },
	[C_RKEY_BAD_BUFID] = { "rkey-bad-bufid", "io",
		"(--new-rkey) rkey_rsp buf_id (msg_id+1)%qd" },
	[C_RKEY_SHORT] = { "rkey-short", "io",
		"(--new-rkey) rkey_rsp of 4 bytes" },
	[C_RKEY_WRONG_TYPE] = { "rkey-wrong-type", "io",
		"(--new-rkey) rkey_rsp with type 1" },
	[C_HB_FLOOD] = { "hb-flood", "hb",
		"after INFO, 20000 HB_MSG back to back on cid 0" },
	[C_HB_ACK_UNSOLICITED] = { "hb-ack-unsolicited", "hb",
		"after INFO, HB_ACK every 100 ms, unasked" },
	[C_HB_SILENT] = { "hb-silent", "hb",
		"after INFO, send nothing: no HB_ACK, no HB_MSG, no IO response" },
	[C_HB_ON_IO_CON] = { "hb-on-io-con", "hb",
		"own HB_MSG sent on cid 1 instead of cid 0" },
};

/* ------------------------------------------------------------------ */
/* State                                                                */

struct dev {
	struct dev *next;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	unsigned int max_qp_wr;
	unsigned int max_cqe;
};

/* One per sess_uuid; lives until exit so reconnects can be recognised */
struct path {
	struct path *next;
	unsigned int seq;
	uint8_t uuid[16];
	unsigned int nsess;		/* sessions (incarnations) created */
	struct sess *cur;		/* current incarnation or NULL */
};

/* One incarnation of a path: the connections of one recon_cnt */
struct sess {
	struct sess *next;
	struct path *path;
	int good;			/* came in on --good-addr */
	struct dev *dev;
	uint8_t paths_uuid[16];
	uint16_t recon_cnt;
	unsigned int cid_num;
	struct conn **con;		/* [cid_num] */
	unsigned int nconns;
	int closing;
	int info_done;
	int info_pending;
	int new_rkey;
	/* what conn_rsp says */
	unsigned int adv_qd;
	uint32_t adv_max_io, adv_max_hdr, adv_flags;
	/* the chunk layout really used */
	unsigned int qd;
	uint32_t chunk;
	unsigned int mem_bits;
	uint8_t *chunks;
	size_t chunks_len;
	struct ibv_mr **mrs;
	unsigned int nmrs;
	uint64_t next_hb, next_unsol, info_at;
	unsigned int flood_left;
	unsigned long unsol_cnt;
	int flood_logged;
	char tag[32];
};

enum { CS_PENDING, CS_ACCEPTED, CS_ESTABLISHED };

struct conn {
	struct conn *next;
	unsigned int seq;
	struct rdma_cm_id *id;
	struct sess *sess;
	struct dev *dev;
	unsigned int cid;
	int state;
	int disconnecting;		/* wanted */
	int disc_sent;			/* rdma_disconnect done */
	int disc_on_est;		/* hostile: disconnect when established */
	struct ibv_cq *scq, *rcq;
	unsigned int max_send, max_recv;
	unsigned int sq_out;
	uint8_t *buf;
	size_t buf_len;
	struct ibv_mr *mr;
	unsigned int tx_slots, tx_next;
	size_t info_rx_off, info_tx_off, info_tx_len;
	unsigned long hb_rx, hback_rx, io_rx, flushed;
};

static struct {
	const char *addr;
	const char *port;
	enum hcase hcase;
	unsigned int qd;
	uint32_t max_io, max_hdr;
	int new_rkey;
	int timeout;
	const char *expect_sess;
	int also_answer;
	const char *good_addr;
} opt = {
	.port = "1234",
	.qd = 16,
	.max_io = 4096,
	.max_hdr = 4096,
	.timeout = 300,
};

static volatile sig_atomic_t stop_flag;
static struct rdma_event_channel *ech;
static struct rdma_cm_id *listen_id;
/* --good-addr: paths that connect here are always served correctly */
static struct rdma_cm_id *good_listen_id;
/* the path being handled came in on the good listener */
static int cur_good;
static struct dev *devs;
static struct path *paths;
static struct sess *sesss;
static struct conn *conns;
static unsigned int conn_seq, path_seq, req_seq;

static int is(enum hcase c)
{
	return !cur_good && opt.hcase == c;
}

/* The case in force for the path being handled */
static enum hcase cur_case(void)
{
	return cur_good ? C_GOOD : opt.hcase;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define hostile(fmt, ...)	say("hostile: " fmt, ##__VA_ARGS__)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static const char *err_str(int ret)
{
	return strerror(ret < 0 ? -ret : ret);
}

static void uuid_str(const uint8_t *u, char *s)
{
	static const int dash[] = { 4, 6, 8, 10 };
	int i, j = 0, d = 0;

	for (i = 0; i < 16; i++) {
		if (d < 4 && i == dash[d]) {
			s[j++] = '-';
			d++;
		}
		sprintf(s + j, "%02x", u[i]);
		j += 2;
	}
	s[j] = 0;
}

/* ilog2(n - 1) + 1 for n > 1, 0 for n == 1 (as the client computes it) */
static unsigned int bits_for(uint32_t n)
{
	return n > 1 ? 32 - __builtin_clz(n - 1) : 0;
}

static uint32_t rsp_imm(unsigned int type, uint32_t msg_id, int err)
{
	uint32_t e = (err < 0 ? -err : err) & 0x1ff;

	return type << 28 | e << 19 | (msg_id & 0x7ffff);
}

/* ------------------------------------------------------------------ */
/* Devices                                                              */

static struct dev *dev_get(struct ibv_context *verbs)
{
	struct ibv_device_attr attr;
	struct dev *d;
	int ret, fl;

	for (d = devs; d; d = d->next)
		if (d->verbs == verbs)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d) {
		say("error: out of memory");
		return NULL;
	}
	ret = ibv_query_device(verbs, &attr);
	if (ret) {
		say("error: ibv_query_device: %s", err_str(ret));
		goto err;
	}
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		say("error: ibv_alloc_pd: %s", strerror(errno));
		goto err;
	}
	d->ch = ibv_create_comp_channel(verbs);
	if (!d->ch) {
		say("error: ibv_create_comp_channel: %s", strerror(errno));
		goto err_pd;
	}
	fl = fcntl(d->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(d->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		say("error: fcntl(comp channel): %s", strerror(errno));
		goto err_ch;
	}
	d->verbs = verbs;
	d->max_qp_wr = attr.max_qp_wr;
	d->max_cqe = attr.max_cqe;
	d->next = devs;
	devs = d;
	say("device %s: max_qp_wr %d max_cqe %d max_mr_size %llu",
	    ibv_get_device_name(verbs->device), attr.max_qp_wr, attr.max_cqe,
	    (unsigned long long)attr.max_mr_size);
	return d;

err_ch:
	ibv_destroy_comp_channel(d->ch);
err_pd:
	ibv_dealloc_pd(d->pd);
err:
	free(d);
	return NULL;
}

static void dev_free_all(void)
{
	struct dev *d;
	int ret;

	while ((d = devs)) {
		devs = d->next;
		ret = ibv_dealloc_pd(d->pd);
		if (ret)
			say("error: ibv_dealloc_pd: %s", err_str(ret));
		ret = ibv_destroy_comp_channel(d->ch);
		if (ret)
			say("error: ibv_destroy_comp_channel: %s", err_str(ret));
		free(d);
	}
}

/* ------------------------------------------------------------------ */
/* Paths and sessions                                                   */

static struct path *path_get(const uint8_t *uuid)
{
	struct path *p;

	for (p = paths; p; p = p->next)
		if (!memcmp(p->uuid, uuid, 16))
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->uuid, uuid, 16);
	p->seq = ++path_seq;
	p->next = paths;
	paths = p;
	return p;
}

static void sess_free(struct sess *s)
{
	struct sess **pp;
	unsigned int i;
	int ret;

	for (i = 0; i < s->nmrs; i++) {
		if (!s->mrs[i])
			continue;
		ret = ibv_dereg_mr(s->mrs[i]);
		if (ret)
			say("error: ibv_dereg_mr(chunks): %s", err_str(ret));
	}
	free(s->mrs);
	free(s->chunks);
	free(s->con);
	if (s->path->cur == s)
		s->path->cur = NULL;
	for (pp = &sesss; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	say("session %s freed", s->tag);
	free(s);
}

static void conn_disconnect(struct conn *c);

static void sess_close(struct sess *s, const char *why)
{
	unsigned int i;

	if (s->closing)
		return;
	s->closing = 1;
	if (s->path->cur == s)
		s->path->cur = NULL;
	say("session %s closing: %s", s->tag, why);
	for (i = 0; i < s->cid_num; i++)
		if (s->con[i])
			conn_disconnect(s->con[i]);
	if (!s->nconns)
		sess_free(s);
}

/*
 * Advertised conn_rsp values for a new session, and the chunk layout that
 * backs them.  A layout we cannot allocate (qd 0, a 32-bit overflow, more
 * than MAX_BACKED bytes) falls back to the --qd/--max-io/--max-hdr one.
 */
static struct sess *sess_new(struct path *p, struct dev *d,
			     const uint8_t *paths_uuid, uint16_t recon_cnt,
			     unsigned int cid_num)
{
	uint64_t chunk64, total;
	struct sess *s;
	unsigned int i;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->good = cur_good;
	s->con = calloc(cid_num, sizeof(*s->con));
	if (!s->con) {
		free(s);
		return NULL;
	}
	s->path = p;
	s->dev = d;
	memcpy(s->paths_uuid, paths_uuid, 16);
	s->recon_cnt = recon_cnt;
	s->cid_num = cid_num;
	s->new_rkey = opt.new_rkey;
	p->nsess++;
	snprintf(s->tag, sizeof(s->tag), "p%u.r%u", p->seq, recon_cnt);

	s->adv_qd = opt.qd;
	s->adv_max_io = opt.max_io;
	s->adv_max_hdr = opt.max_hdr;
	s->adv_flags = s->new_rkey ? NEW_RKEY_F : 0;
	switch (cur_case()) {
	case C_RSP_QD0:
		s->adv_qd = 0;
		break;
	case C_RSP_QD_MAX:
		s->adv_qd = 65535;
		break;
	case C_RSP_QD_CHANGES:
		if (p->nsess > 1)
			s->adv_qd = opt.qd > 1 ? opt.qd / 2 : 2;
		break;
	case C_RSP_MAXIO0:
		s->adv_max_io = 0;
		break;
	case C_RSP_MAXIO_MISALIGNED:
		s->adv_max_io = 4097;
		break;
	case C_RSP_MAXIO_HUGE:
		s->adv_max_io = 0xfffff000u;
		break;
	case C_RSP_HDR0:
		s->adv_max_hdr = 0;
		break;
	case C_RSP_CHUNK_OVERFLOW:
		s->adv_max_io = 0xffffffffu;
		s->adv_max_hdr = 4096;
		break;
	case C_RSP_FLAGS_JUNK:
		s->adv_flags |= 0xfffffffcu;
		break;
	default:
		break;
	}

	chunk64 = (uint64_t)s->adv_max_io + s->adv_max_hdr;
	total = chunk64 * s->adv_qd;
	if (s->adv_qd && chunk64 && chunk64 <= IMM_PAYL_MASK &&
	    total <= MAX_BACKED) {
		s->qd = s->adv_qd;
		s->chunk = chunk64;
	} else {
		s->qd = opt.qd;
		s->chunk = opt.max_io + opt.max_hdr;
		say("note: session %s: advertised qd %u chunk %llu cannot be backed, chunks use qd %u chunk %u",
		    s->tag, s->adv_qd, (unsigned long long)chunk64, s->qd,
		    s->chunk);
	}
	s->mem_bits = 28 - bits_for(s->qd);
	s->chunks_len = (size_t)s->qd * s->chunk;
	if (posix_memalign((void **)&s->chunks, 4096, s->chunks_len)) {
		s->chunks = NULL;
		say("error: cannot allocate %zu bytes of chunks", s->chunks_len);
		goto err;
	}
	memset(s->chunks, 0, s->chunks_len);

	/*
	 * Without NEW_RKEY one MR covers all chunks.  With it, one MR per
	 * chunk like the kernel server; but user space has no REG_MR work
	 * request, so the "new" rkey sent in every RKEY_RSP is the same one.
	 */
	s->nmrs = s->new_rkey ? s->qd : 1;
	s->mrs = calloc(s->nmrs, sizeof(*s->mrs));
	if (!s->mrs)
		goto err;
	for (i = 0; i < s->nmrs; i++) {
		size_t len = s->new_rkey ? s->chunk : s->chunks_len;

		s->mrs[i] = ibv_reg_mr(d->pd, s->chunks + (size_t)i * s->chunk,
				       len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
		if (!s->mrs[i]) {
			say("error: ibv_reg_mr(chunks, %zu): %s", len,
			    strerror(errno));
			goto err;
		}
	}
	s->next = sesss;
	sesss = s;
	p->cur = s;
	say("session %s new: cid_num %u qd %u chunk %u (%u MRs)%s", s->tag,
	    cid_num, s->qd, s->chunk, s->nmrs,
	    s->new_rkey ? " new-rkey" : "");
	return s;

err:
	for (i = 0; s->mrs && i < s->nmrs; i++)
		if (s->mrs[i])
			ibv_dereg_mr(s->mrs[i]);
	free(s->mrs);
	free(s->chunks);
	free(s->con);
	free(s);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Connections                                                          */

/* Is there a live session of another path with this paths_uuid? */
static int clt_known(const uint8_t *paths_uuid, struct path *self)
{
	struct sess *s;

	for (s = sesss; s; s = s->next)
		if (!s->closing && s->path != self &&
		    !memcmp(s->paths_uuid, paths_uuid, 16))
			return 1;
	return 0;
}

static struct conn *conn_alloc(struct rdma_cm_id *id)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->seq = ++conn_seq;
	c->id = id;
	c->state = CS_PENDING;
	id->context = c;
	c->next = conns;
	conns = c;
	return c;
}

static void conn_destroy(struct conn *c)
{
	struct sess *s = c->sess;
	struct conn **pp;
	int ret;

	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->scq) {
		ret = ibv_destroy_cq(c->scq);
		if (ret)
			say("error: ibv_destroy_cq: %s", err_str(ret));
	}
	if (c->rcq) {
		ret = ibv_destroy_cq(c->rcq);
		if (ret)
			say("error: ibv_destroy_cq: %s", err_str(ret));
	}
	if (c->mr) {
		ret = ibv_dereg_mr(c->mr);
		if (ret)
			say("error: ibv_dereg_mr: %s", err_str(ret));
	}
	free(c->buf);
	ret = rdma_destroy_id(c->id);
	if (ret)
		say("error: rdma_destroy_id: %s", strerror(errno));
	for (pp = &conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	say("conn c%u destroyed: hb_msg_rx %lu hb_ack_rx %lu io_rx %lu flushed %lu",
	    c->seq, c->hb_rx, c->hback_rx, c->io_rx, c->flushed);
	if (s) {
		if (s->con[c->cid] == c)
			s->con[c->cid] = NULL;
		s->nconns--;
		if (!s->nconns && s->closing)
			sess_free(s);
	}
	free(c);
}

static void do_rdma_disconnect(struct conn *c)
{
	if (c->disc_sent)
		return;
	c->disc_sent = 1;
	if (rdma_disconnect(c->id))
		say("error: c%u rdma_disconnect: %s", c->seq, strerror(errno));
	else
		say("disconnect c%u cid %u", c->seq, c->cid);
}

/* Established: disconnect now; accepted: when it becomes established */
static void conn_disconnect(struct conn *c)
{
	if (c->disconnecting)
		return;
	c->disconnecting = 1;
	if (c->state == CS_ESTABLISHED)
		do_rdma_disconnect(c);
}

static int post_recv(struct conn *c, int info)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = info ? WRID_INFO : WRID_EMPTY;
	if (info) {
		sge.addr = (uintptr_t)(c->buf + c->info_rx_off);
		sge.length = INFO_REQ_LEN;
		sge.lkey = c->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	ret = ibv_post_recv(c->id->qp, &wr, &bad);
	if (ret)
		say("error: c%u ibv_post_recv: %s", c->seq, err_str(ret));
	return ret;
}

static int conn_setup(struct conn *c)
{
	struct sess *s = c->sess;
	struct dev *d = c->dev;
	struct ibv_qp_init_attr qa;
	unsigned int nrecv, i, lim;

	lim = d->max_qp_wr < d->max_cqe ? d->max_qp_wr : d->max_cqe;
	c->max_send = 4 * s->qd + 64;
	if (c->max_send > lim)
		c->max_send = lim;
	nrecv = c->cid ? s->qd : 1 + (s->qd > SERVICE_QD ? s->qd : SERVICE_QD);
	c->max_recv = nrecv + 64;
	if (c->max_recv > lim)
		c->max_recv = lim;
	if (nrecv > c->max_recv)
		nrecv = c->max_recv;

	c->scq = ibv_create_cq(d->verbs, c->max_send, c, d->ch, 0);
	if (!c->scq) {
		say("error: ibv_create_cq(%u): %s", c->max_send, strerror(errno));
		return -1;
	}
	c->rcq = ibv_create_cq(d->verbs, c->max_recv, c, d->ch, 0);
	if (!c->rcq) {
		say("error: ibv_create_cq(%u): %s", c->max_recv, strerror(errno));
		return -1;
	}
	if (ibv_req_notify_cq(c->scq, 0) || ibv_req_notify_cq(c->rcq, 0)) {
		say("error: ibv_req_notify_cq failed");
		return -1;
	}

	/* small send slots, then on cid 0 the INFO_REQ and INFO_RSP buffers */
	c->tx_slots = c->max_send;
	c->buf_len = (size_t)c->tx_slots * TX_SLOT;
	if (c->cid == 0) {
		c->info_rx_off = c->buf_len;
		c->buf_len += 512;
		c->info_tx_off = c->buf_len;
		c->info_tx_len = 8 + 16 * (size_t)(s->qd + 64);
		c->buf_len += c->info_tx_len;
	}
	c->buf = calloc(1, c->buf_len);
	if (!c->buf) {
		say("error: out of memory");
		return -1;
	}
	c->mr = ibv_reg_mr(d->pd, c->buf, c->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		say("error: ibv_reg_mr: %s", strerror(errno));
		return -1;
	}

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = c;
	qa.send_cq = c->scq;
	qa.recv_cq = c->rcq;
	qa.cap.max_send_wr = c->max_send;
	qa.cap.max_recv_wr = c->max_recv;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(c->id, d->pd, &qa)) {
		say("error: rdma_create_qp(send %u recv %u): %s", c->max_send,
		    c->max_recv, strerror(errno));
		return -1;
	}
	/* receives go in before the accept; INFO_REQ takes the first one */
	if (c->cid == 0 && post_recv(c, 1))
		return -1;
	for (i = 0; i < nrecv - (c->cid == 0); i++)
		if (post_recv(c, 0))
			return -1;
	say("conn c%u cid %u: qp %u max_send %u max_recv %u, %u receives posted",
	    c->seq, c->cid, c->id->qp->qp_num, c->max_send, c->max_recv, nrecv);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sending                                                              */

static void send_done(struct conn *c, struct ibv_wc *wc)
{
	if (c->sq_out)
		c->sq_out--;
	if (wc->status == IBV_WC_SUCCESS)
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		c->flushed++;
		return;
	}
	say("error: c%u cid %u send completion: %s (opcode %d vendor_err %#x)",
	    c->seq, c->cid, ibv_wc_status_str(wc->status), wc->opcode,
	    wc->vendor_err);
	if (c->sess)
		sess_close(c->sess, "send completion error");
}

static int poll_send(struct conn *c)
{
	struct ibv_wc wc[32];
	int n, i, tot = 0;

	while ((n = ibv_poll_cq(c->scq, 32, wc)) > 0) {
		for (i = 0; i < n; i++)
			send_done(c, &wc[i]);
		tot += n;
	}
	if (n < 0)
		say("error: c%u ibv_poll_cq(send) failed", c->seq);
	return tot;
}

/* Wait (polling the send CQ) until n more WRs fit in the send queue */
static int sq_reserve(struct conn *c, unsigned int n)
{
	uint64_t end = now_ms() + SQ_WAIT_MS;

	while (c->sq_out + n > c->max_send) {
		if (poll_send(c))
			continue;
		if (now_ms() > end)
			return -1;
		usleep(100);
	}
	return 0;
}

/* Post n WRs as one chain, all signaled */
static int post_chain(struct conn *c, struct ibv_send_wr *wr, int n,
		      const char *what)
{
	struct ibv_send_wr *bad = NULL, *w;
	int i, ret;

	if (!n)
		return 0;
	if (c->disc_sent || !c->id->qp) {
		say("c%u: not sending %s, connection is going away", c->seq,
		    what);
		return -1;
	}
	for (i = 0; i < n; i++) {
		wr[i].wr_id = WRID_SEND;
		wr[i].send_flags |= IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (sq_reserve(c, n)) {
		say("error: c%u send queue full for %d ms, dropping %s",
		    c->seq, SQ_WAIT_MS, what);
		return -1;
	}
	ret = ibv_post_send(c->id->qp, wr, &bad);
	for (w = wr; w && w != bad; w = w->next)
		c->sq_out++;
	if (ret) {
		say("error: c%u ibv_post_send(%s): %s", c->seq, what,
		    err_str(ret));
		return -1;
	}
	return 0;
}

static void wr_imm(struct ibv_send_wr *wr, uint32_t imm)
{
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->imm_data = htonl(imm);
}

/* copy len bytes into a send slot, point sge at it */
static void wr_send(struct conn *c, struct ibv_send_wr *wr,
		    struct ibv_sge *sge, const void *data, size_t len)
{
	uint8_t *p = c->buf + (size_t)(c->tx_next++ % c->tx_slots) * TX_SLOT;

	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_SEND;
	if (len) {
		memcpy(p, data, len);
		sge->addr = (uintptr_t)p;
		sge->length = len;
		sge->lkey = c->mr->lkey;
		wr->sg_list = sge;
		wr->num_sge = 1;
	}
}

static int send_imm(struct conn *c, uint32_t imm, const char *what)
{
	struct ibv_send_wr wr;

	wr_imm(&wr, imm);
	return post_chain(c, &wr, 1, what);
}

/* ------------------------------------------------------------------ */
/* INFO                                                                 */

static void put_desc(uint8_t *p, unsigned int i, uint64_t addr, uint32_t key,
		     uint32_t len)
{
	uint8_t *d = p + 8 + 16 * i;

	put64(d, addr);
	put32(d + 8, key);
	put32(d + 12, len);
}

static uint32_t chunk_key(struct sess *s, unsigned int i)
{
	return s->mrs[s->new_rkey ? i % s->nmrs : 0]->rkey;
}

static uint64_t chunk_addr(struct sess *s, unsigned int i)
{
	return (uintptr_t)(s->chunks + (size_t)(i % s->qd) * s->chunk);
}

/* Build INFO_RSP into p, return its length */
static size_t info_build(struct sess *s, uint8_t *p, size_t room)
{
	unsigned int qd = s->qd, n, i, k, sg_cnt;
	size_t len;

	memset(p, 0, room);
	put16(p, MSG_INFO_RSP);
	if (s->new_rkey) {
		n = qd;
		for (i = 0; i < qd; i++)
			put_desc(p, i, chunk_addr(s, i), chunk_key(s, i),
				 s->chunk);
	} else {
		n = 1;
		put_desc(p, 0, chunk_addr(s, 0), chunk_key(s, 0),
			 (uint32_t)s->chunks_len);
	}
	sg_cnt = n;
	len = 8 + 16 * (size_t)n;

	switch (cur_case()) {
	case C_INFO_WRONG_TYPE:
		put16(p, MSG_INFO_REQ);
		hostile("INFO_RSP type 0");
		break;
	case C_INFO_SHORT:
		len = 4;
		hostile("INFO_RSP of 4 bytes");
		break;
	case C_INFO_SG0:
		sg_cnt = 0;
		hostile("INFO_RSP sg_cnt 0 (%u descriptors follow)", n);
		break;
	case C_INFO_SG_ABOVE_QD:
		for (i = 0; i < qd; i++)
			put_desc(p, i, chunk_addr(s, i), chunk_key(s, i),
				 s->chunk);
		sg_cnt = qd + 1;
		len = 8 + 16 * (size_t)qd;
		hostile("INFO_RSP sg_cnt %u with %u descriptors", sg_cnt, qd);
		break;
	case C_INFO_SG_INDIVISIBLE: {
		unsigned int first = 0, take;

		for (k = 2; qd % k == 0; k++)
			;
		memset(p + 8, 0, room - 8);
		for (i = 0; i < k; i++) {
			take = qd / k + (i < qd % k);
			if (!take)
				take = 1;
			put_desc(p, i, chunk_addr(s, first), chunk_key(s, first),
				 take * s->chunk);
			first += take;
		}
		sg_cnt = k;
		len = 8 + 16 * (size_t)k;
		hostile("INFO_RSP sg_cnt %u, qd %u", k, qd);
		break;
	}
	case C_INFO_DESC_LEN0:
		put32(p + 8 + 12, 0);
		hostile("INFO_RSP desc[0].len 0");
		break;
	case C_INFO_DESC_MISALIGNED:
		put32(p + 8 + 12, get32(p + 8 + 12) - 1);
		hostile("INFO_RSP desc[0].len %u, chunk %u", get32(p + 8 + 12),
			s->chunk);
		break;
	case C_INFO_DESC_SHORT:
		memset(p + 8, 0, room - 8);
		put_desc(p, 0, chunk_addr(s, 0), chunk_key(s, 0),
			 (qd - 1) * s->chunk);
		sg_cnt = 1;
		len = 8 + 16;
		hostile("INFO_RSP one descriptor of %u chunks, qd %u", qd - 1, qd);
		break;
	case C_INFO_DESC_OVERFLOW:
		memset(p + 8, 0, room - 8);
		put_desc(p, 0, 0xffffffffffff0000ull, chunk_key(s, 0),
			 (uint32_t)s->chunks_len);
		sg_cnt = 1;
		len = 8 + 16;
		hostile("INFO_RSP desc addr 0xffffffffffff0000 len %zu",
			s->chunks_len);
		break;
	case C_INFO_TOO_BIG:
		len = room;
		hostile("INFO_RSP SEND of %zu bytes (client expects <= %zu)",
			len, 8 + 16 * (size_t)qd);
		break;
	default:
		break;
	}
	put16(p + 2, sg_cnt);
	return len;
}

static void sess_after_info(struct sess *s)
{
	struct conn *c0 = s->con[0];
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint8_t junk[64];
	uint64_t now = now_ms();

	s->info_done = 1;
	s->next_hb = now + HB_INTERVAL_MS;
	s->next_unsol = now + UNSOL_ACK_MS;
	if (is(C_HB_FLOOD))
		s->flood_left = FLOOD_COUNT;
	if (is(C_IO_SEND_UNEXPECTED)) {
		memset(junk, 0x5a, sizeof(junk));
		wr_send(c0, &wr, &sge, junk, sizeof(junk));
		if (!post_chain(c0, &wr, 1, "unexpected SEND"))
			hostile("plain 64-byte SEND on cid 0");
	}
	if (is(C_IO_SEND_EMPTY)) {
		wr_send(c0, &wr, &sge, NULL, 0);
		if (!post_chain(c0, &wr, 1, "empty SEND"))
			hostile("plain zero-length SEND on cid 0");
	}
	if (is(C_HB_SILENT))
		hostile("silent from now on (no HB_ACK, no HB_MSG, no IO responses)");
}

static void send_info_rsp(struct sess *s)
{
	struct conn *c0 = s->con[0];
	struct ibv_send_wr wr[2];
	struct ibv_sge sge;
	uint8_t *p = c0->buf + c0->info_tx_off;
	size_t len;
	int n = 1;

	len = info_build(s, p, c0->info_tx_len);
	memset(wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)p;
	sge.length = len;
	sge.lkey = c0->mr->lkey;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	if (is(C_INFO_TWICE)) {
		wr[1] = wr[0];
		n = 2;
		hostile("INFO_RSP sent twice");
	}
	if (post_chain(c0, wr, n, "INFO_RSP")) {
		sess_close(s, "cannot send INFO_RSP");
		return;
	}
	say("INFO_RSP c%u sess %s: sg_cnt %u len %zu", c0->seq, s->tag,
	    get16(p + 2), len);
	sess_after_info(s);
}

static void handle_info_req(struct conn *c, uint32_t byte_len)
{
	struct sess *s = c->sess;
	uint8_t *m = c->buf + c->info_rx_off;
	unsigned int i, est = 0;
	char name[256];

	if (byte_len < INFO_REQ_LEN || get16(m) != MSG_INFO_REQ) {
		say("error: c%u bad INFO_REQ: %u bytes, type %u", c->seq,
		    byte_len, byte_len >= 2 ? get16(m) : 0xffff);
		sess_close(s, "bad INFO_REQ");
		return;
	}
	memcpy(name, m + 2, 255);
	name[255] = 0;
	for (i = 0; i < s->cid_num; i++)
		if (s->con[i] && s->con[i]->state == CS_ESTABLISHED)
			est++;
	say("INFO_REQ c%u sess %s: sessname '%s' (%u of %u connections established)",
	    c->seq, s->tag, name, est, s->cid_num);
	if (c->cid != 0)
		say("warning: INFO_REQ on cid %u", c->cid);
	if (strchr(name, '/') || strchr(name, '.'))
		say("note: sessname has '/' or '.'; the kernel server refuses that");
	if (s->info_done || s->info_pending) {
		say("warning: INFO_REQ again, ignored");
		return;
	}
	switch (cur_case()) {
	case C_INFO_NONE:
		hostile("not answering INFO_REQ");
		return;
	case C_INFO_DISCONNECT:
		hostile("disconnecting instead of INFO_RSP");
		sess_close(s, "hostile info-disconnect");
		return;
	case C_INFO_SESSNAME:
		if (opt.expect_sess && strcmp(name, opt.expect_sess)) {
			hostile("sessname '%s' != '%s', closing as on a name clash",
				name, opt.expect_sess);
			sess_close(s, "sessname refused");
			return;
		}
		break;
	case C_INFO_LATE:
		s->info_pending = 1;
		s->info_at = now_ms() + INFO_LATE_MS;
		hostile("INFO_RSP delayed by %d ms", INFO_LATE_MS);
		return;
	default:
		break;
	}
	send_info_rsp(s);
}

/* ------------------------------------------------------------------ */
/* IO                                                                   */

struct ioreq {
	uint32_t msg_id, off;
	unsigned int dir;
	unsigned int usr_len, data_len;
	unsigned int flags, sg_cnt;
	uint64_t raddr;
	uint32_t rkey, rlen;
};

/*
 * The response WR: a zero-length RDMA_WRITE_WITH_IMM, or with NEW_RKEY a
 * SEND_WITH_IMM carrying an rkey_rsp for the chunk.
 */
static void wr_rsp(struct conn *c, struct sess *s, struct ibv_send_wr *wr,
		   struct ibv_sge *sge, uint32_t imm, uint32_t buf_id)
{
	uint8_t msg[TX_SLOT];
	size_t len = 8;

	memset(msg, 0, sizeof(msg));
	if (!s->new_rkey && !is(C_IO_BIG_SEND)) {
		wr_imm(wr, imm);
		return;
	}
	put16(msg, MSG_RKEY_RSP);
	put16(msg + 2, buf_id);
	put32(msg + 4, chunk_key(s, buf_id));
	if (is(C_RKEY_WRONG_TYPE))
		put16(msg, MSG_INFO_RSP);
	if (is(C_RKEY_BAD_BUFID))
		put16(msg + 2, (buf_id + 1) % s->qd);
	if (is(C_RKEY_SHORT))
		len = 4;
	if (is(C_IO_BIG_SEND))
		len = TX_SLOT;
	wr_send(c, wr, sge, msg, len);
	wr->opcode = IBV_WR_SEND_WITH_IMM;
	wr->imm_data = htonl(imm);
}

static void io_reply(struct conn *c, struct ioreq *r, int err)
{
	struct sess *s = c->sess;
	struct ibv_send_wr wr[8];
	struct ibv_sge sge[8], dsge;
	unsigned int type, n = 0, i;
	uint32_t imm, id = r->msg_id;
	int inv = r->dir == MSG_READ && (r->flags & NEED_INVAL_F) && r->sg_cnt;
	uint8_t *chunk;

	if (is(C_IO_RSP_ON_CID0) && c->cid != 0) {
		if (s->con[0] && !s->con[0]->disc_sent) {
			hostile("response to msg_id %u from cid %u sent on cid 0",
				id, c->cid);
			c = s->con[0];
		}
	}
	if (is(C_IO_ERRNO_RANGE))
		err = -0x1ff;

	memset(wr, 0, sizeof(wr));
	if (is(C_IO_RSP_NOT_INFLIGHT)) {
		wr_rsp(c, s, &wr[n], &sge[n],
		       rsp_imm(IMM_IO_RSP, (id + 1) % s->qd, 0), (id + 1) % s->qd);
		n++;
		hostile("response for msg_id %u before the one for %u",
			(id + 1) % s->qd, id);
	}
	if (r->dir == MSG_READ && !err && r->sg_cnt) {
		/* data: byte i of a READ reply is (msg_id + i) & 0xff */
		chunk = s->chunks + (size_t)id * s->chunk;
		for (i = 0; i < r->rlen; i++)
			chunk[i] = id + i;
		memset(&wr[n], 0, sizeof(wr[n]));
		dsge.addr = (uintptr_t)chunk;
		dsge.length = r->rlen;
		dsge.lkey = s->mrs[s->new_rkey ? id : 0]->lkey;
		wr[n].opcode = IBV_WR_RDMA_WRITE;
		wr[n].sg_list = &dsge;
		wr[n].num_sge = 1;
		wr[n].wr.rdma.remote_addr = r->raddr;
		wr[n].wr.rdma.rkey = r->rkey;
		n++;
	}
	type = IMM_IO_RSP;
	if (inv) {
		if (is(C_IO_NO_REMOTE_INV)) {
			hostile("READ msg_id %u: IO_RSP without remote invalidation",
				id);
		} else {
			type = IMM_IO_RSP_W_INV;
			if (is(C_IO_WINV_NO_SEND)) {
				hostile("READ msg_id %u: IO_RSP_W_INV without SEND_WITH_INV",
					id);
			} else {
				memset(&wr[n], 0, sizeof(wr[n]));
				wr[n].opcode = IBV_WR_SEND_WITH_INV;
				wr[n].invalidate_rkey = r->rkey;
				n++;
			}
		}
	}
	imm = rsp_imm(type, id, err);
	if (is(C_IO_IMM_UNKNOWN)) {
		wr_rsp(c, s, &wr[n], &sge[n], (5u << 28) | (imm & IMM_PAYL_MASK),
		       id);
		n++;
		hostile("msg_id %u answered with IMM type 5", id);
	} else if (is(C_IO_MSGID_BEYOND)) {
		wr_rsp(c, s, &wr[n], &sge[n], rsp_imm(type, s->qd + 3, err),
		       s->qd + 3);
		n++;
		hostile("msg_id %u answered as msg_id %u", id, s->qd + 3);
	}
	if ((!is(C_IO_IMM_UNKNOWN) && !is(C_IO_MSGID_BEYOND)) ||
	    opt.also_answer) {
		wr_rsp(c, s, &wr[n], &sge[n], imm, id);
		n++;
		if (is(C_IO_RSP_TWICE)) {
			wr_rsp(c, s, &wr[n], &sge[n], imm, id);
			n++;
			hostile("response to msg_id %u sent twice", id);
		}
	}
	if (is(C_IO_ERRNO_RANGE))
		hostile("msg_id %u answered with errno field 0x1ff", id);
	if (is(C_IO_BIG_SEND))
		hostile("msg_id %u answered with a 64-byte SEND_WITH_IMM", id);
	if (is(C_RKEY_BAD_BUFID) || is(C_RKEY_SHORT) || is(C_RKEY_WRONG_TYPE))
		hostile("msg_id %u: bad rkey_rsp (%s)", id,
			cases[opt.hcase].name);
	if (post_chain(c, wr, n, "IO response"))
		sess_close(s, "cannot post IO response");
}

static void handle_io(struct conn *c, uint32_t payload)
{
	struct sess *s = c->sess;
	struct ioreq r;
	uint8_t *hdr;
	uint32_t room;
	int err = 0;

	memset(&r, 0, sizeof(r));
	r.msg_id = payload >> s->mem_bits;
	r.off = payload & ((1u << s->mem_bits) - 1);
	c->io_rx++;
	if (!s->info_done)
		say("warning: c%u IO request before INFO_RSP", c->seq);
	if (r.msg_id >= s->qd || r.off >= s->chunk) {
		say("error: c%u IO request msg_id %u off %u out of range (qd %u chunk %u)",
		    c->seq, r.msg_id, r.off, s->qd, s->chunk);
		sess_close(s, "bad IO request");
		return;
	}
	hdr = s->chunks + (size_t)r.msg_id * s->chunk + r.off;
	room = s->chunk - r.off;
	r.dir = room >= 2 ? get16(hdr) : 0xffff;
	if (r.dir == MSG_WRITE && room >= 4) {
		r.usr_len = get16(hdr + 2);
	} else if (r.dir == MSG_READ && room >= 8) {
		r.usr_len = get16(hdr + 2);
		r.flags = get16(hdr + 4);
		r.sg_cnt = get16(hdr + 6);
		if (r.sg_cnt == 1 && room >= 24) {
			r.raddr = get64(hdr + 8);
			r.rkey = get32(hdr + 16);
			r.rlen = get32(hdr + 20);
		} else if (r.sg_cnt == 1) {
			r.sg_cnt = 0xffff;
		}
	} else {
		say("error: c%u IO msg_id %u off %u: bad or truncated message, type %u",
		    c->seq, r.msg_id, r.off, r.dir);
		sess_close(s, "bad IO message");
		return;
	}
	r.data_len = r.usr_len <= r.off ? r.off - r.usr_len : 0;
	if (r.dir == MSG_WRITE)
		say("IO c%u cid %u msg_id %u WRITE usr_len %u data_len %u",
		    c->seq, c->cid, r.msg_id, r.usr_len, r.data_len);
	else
		say("IO c%u cid %u msg_id %u READ usr_len %u data_len %u sg_cnt %u flags %#x desc {%#llx %#x %u}",
		    c->seq, c->cid, r.msg_id, r.usr_len, r.data_len, r.sg_cnt,
		    r.flags, (unsigned long long)r.raddr, r.rkey, r.rlen);
	if (r.usr_len > r.off) {
		say("warning: usr_len %u > off %u, dropped (as the kernel server does)",
		    r.usr_len, r.off);
		return;
	}
	if (r.dir == MSG_READ && r.sg_cnt > 1) {
		say("warning: READ sg_cnt %u, dropped (as the kernel server does)",
		    r.sg_cnt);
		return;
	}
	if (r.dir == MSG_READ && r.sg_cnt && (!r.rlen || r.rlen > s->chunk)) {
		say("warning: READ desc len %u outside (0, %u], answering -EINVAL",
		    r.rlen, s->chunk);
		err = -EINVAL;
	}

	if (is(C_HB_SILENT) || is(C_IO_NO_ANSWER)) {
		hostile("not answering msg_id %u", r.msg_id);
		return;
	}
	if (is(C_IO_DISCONNECT)) {
		hostile("disconnecting c%u cid %u instead of answering msg_id %u",
			c->seq, c->cid, r.msg_id);
		conn_disconnect(c);
		return;
	}
	if (is(C_IO_ERRNO_EIO)) {
		hostile("msg_id %u fails with -EIO", r.msg_id);
		err = -EIO;
	}
	io_reply(c, &r, err);
}

/* ------------------------------------------------------------------ */
/* Receive completions                                                  */

static void handle_imm(struct conn *c, uint32_t imm)
{
	struct sess *s = c->sess;
	unsigned int type = imm >> 28;

	switch (type) {
	case IMM_IO_REQ:
		handle_io(c, imm & IMM_PAYL_MASK);
		break;
	case IMM_HB_MSG:
		c->hb_rx++;
		if (c->cid != 0)
			say("warning: c%u HB_MSG on cid %u", c->seq, c->cid);
		if (is(C_HB_SILENT) && s->info_done) {
			if (c->hb_rx < 4)
				hostile("HB_MSG not acknowledged");
			break;
		}
		say("HB_MSG c%u cid %u (#%lu), sending HB_ACK", c->seq, c->cid,
		    c->hb_rx);
		send_imm(c, (uint32_t)IMM_HB_ACK << 28, "HB_ACK");
		break;
	case IMM_HB_ACK:
		c->hback_rx++;
		break;
	default:
		say("warning: c%u unknown IMM %#x", c->seq, imm);
		break;
	}
}

static void recv_done(struct conn *c, struct ibv_wc *wc)
{
	struct sess *s = c->sess;

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			c->flushed++;
			return;
		}
		say("error: c%u cid %u receive completion: %s (opcode %d vendor_err %#x len %u)",
		    c->seq, c->cid, ibv_wc_status_str(wc->status), wc->opcode,
		    wc->vendor_err, wc->byte_len);
		sess_close(s, "receive completion error");
		return;
	}
	if (s->closing || c->disconnecting)
		return;
	/* one consumed, one back */
	if (post_recv(c, 0)) {
		sess_close(s, "cannot repost a receive");
		return;
	}
	switch (wc->opcode) {
	case IBV_WC_RECV:
		if (wc->wr_id == WRID_INFO) {
			handle_info_req(c, wc->byte_len);
			break;
		}
		say("warning: c%u cid %u unexpected SEND of %u bytes", c->seq,
		    c->cid, wc->byte_len);
		break;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		if (wc->wr_id == WRID_INFO)
			say("warning: c%u write-with-imm consumed the INFO_REQ receive",
			    c->seq);
		handle_imm(c, ntohl(wc->imm_data));
		break;
	default:
		say("warning: c%u unexpected receive opcode %d", c->seq,
		    wc->opcode);
		break;
	}
}

static void poll_conn(struct conn *c)
{
	struct ibv_wc wc[32];
	int n, i;

	if (!c->rcq)
		return;
	cur_good = c->sess && c->sess->good;
	poll_send(c);
	while ((n = ibv_poll_cq(c->rcq, 32, wc)) > 0)
		for (i = 0; i < n; i++)
			recv_done(c, &wc[i]);
	if (n < 0)
		say("error: c%u ibv_poll_cq(recv) failed", c->seq);
}

static void cq_events(struct dev *d)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(d->ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			say("error: ibv_req_notify_cq failed");
	}
	if (errno != EAGAIN)
		say("error: ibv_get_cq_event: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Connection manager                                                   */

static void do_reject(struct rdma_cm_id *id, int err, uint8_t len)
{
	uint8_t m[CONN_PRIV_LEN];

	memset(m, 0, sizeof(m));
	put16(m, RTRS_MAGIC);
	put16(m + 2, RTRS_PROTO_VER);
	put16(m + 4, (uint16_t)err);
	if (rdma_reject(id, len ? m : NULL, len))
		say("error: rdma_reject: %s", strerror(errno));
	else
		say("reject errno %d, %u bytes of private data", err, len);
}

static void reject_destroy(struct rdma_cm_id *id, int err, uint8_t len)
{
	do_reject(id, err, len);
	if (rdma_destroy_id(id))
		say("error: rdma_destroy_id: %s", strerror(errno));
}

static size_t build_conn_rsp(struct sess *s, uint8_t *m)
{
	size_t len = CONN_PRIV_LEN;

	memset(m, 0, CONN_PRIV_LEN);
	put16(m, RTRS_MAGIC);
	put16(m + 2, RTRS_PROTO_VER);
	put16(m + 4, 0);
	put16(m + 6, s->adv_qd);
	put32(m + 8, s->adv_max_io);
	put32(m + 12, s->adv_max_hdr);
	put32(m + 16, s->adv_flags);
	switch (cur_case()) {
	case C_RSP_BAD_MAGIC:
		put16(m, 0xBD1B);
		break;
	case C_RSP_BAD_VERSION:
		put16(m + 2, 0x0300);
		break;
	case C_RSP_MINOR_VERSION:
		put16(m + 2, 0x0209);
		break;
	case C_RSP_ERRNO:
		put16(m + 4, (uint16_t)-EIO);
		break;
	case C_RSP_SHORT:
		len = 20;
		break;
	default:
		break;
	}
	return len;
}

static void on_connect_request(struct rdma_cm_id *id, const uint8_t *pd,
			       unsigned int plen)
{
	unsigned int cid, cid_num, seq = ++req_seq;
	char u1[40], u2[40];
	uint8_t rsp[CONN_PRIV_LEN];
	struct rdma_conn_param cp;
	uint16_t recon_cnt;
	struct path *p;
	struct sess *s;
	struct conn *c;
	struct dev *d;
	size_t rlen;

	if (plen < CONN_PRIV_LEN) {
		say("CONNECT_REQUEST #%u: %u bytes of private data", seq, plen);
		reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
		return;
	}
	cid = get16(pd + 6);
	cid_num = get16(pd + 8);
	recon_cnt = get16(pd + 10);
	uuid_str(pd + 12, u1);
	uuid_str(pd + 28, u2);
	say("CONNECT_REQUEST #%u: cid %u cid_num %u recon_cnt %u first_conn %u magic %#x version %#x sess_uuid %s paths_uuid %s",
	    seq, cid, cid_num, recon_cnt, pd[44] & 1, get16(pd + 2),
	    get16(pd + 4), u1, u2);
	if (get16(pd + 2) != RTRS_MAGIC || get16(pd + 4) >> 8 != RTRS_VER_MAJOR) {
		say("error: bad magic or version");
		reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
		return;
	}

	switch (cur_case()) {
	case C_NO_ACCEPT:
		c = conn_alloc(id);
		if (!c) {
			reject_destroy(id, -ENOMEM, CONN_PRIV_LEN);
			return;
		}
		hostile("connect request #%u left unanswered (c%u)", seq,
			c->seq);
		return;
	case C_REJECT_NOPRIVDATA:
		hostile("reject without private data");
		reject_destroy(id, 0, 0);
		return;
	case C_REJECT_SHORT:
		hostile("reject with 10 bytes of private data");
		reject_destroy(id, -EINVAL, 10);
		return;
	case C_REJECT_ENOMEM:
		hostile("reject -ENOMEM");
		reject_destroy(id, -ENOMEM, CONN_PRIV_LEN);
		return;
	case C_REJECT_EBUSY:
		hostile("reject -EBUSY");
		reject_destroy(id, -EBUSY, CONN_PRIV_LEN);
		return;
	case C_REJECT_ERRNO0:
		hostile("reject with errno 0");
		reject_destroy(id, 0, CONN_PRIV_LEN);
		return;
	case C_REJECT_POSITIVE:
		hostile("reject with errno +5");
		reject_destroy(id, 5, CONN_PRIV_LEN);
		return;
	case C_REJECT_CID1:
		if (cid == 1) {
			hostile("reject cid 1 with -ECONNRESET");
			reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
			return;
		}
		break;
	default:
		break;
	}

	if (cid_num > MAX_CID_NUM || cid >= cid_num) {
		say("error: cid %u cid_num %u out of range", cid, cid_num);
		reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
		return;
	}
	d = dev_get(id->verbs);
	p = path_get(pd + 12);
	if (!d || !p) {
		reject_destroy(id, -ENOMEM, CONN_PRIV_LEN);
		return;
	}
	s = p->cur;
	if (!s || s->recon_cnt != recon_cnt) {
		if (cid != 0) {
			say("error: cid %u for no current session of path p%u",
			    cid, p->seq);
			reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
			return;
		}
		/* as the kernel server: first_conn 0 must join a known client */
		if (!(pd[44] & 1) && !clt_known(pd + 28, p)) {
			say("error: first_conn 0 and no session with this paths_uuid");
			reject_destroy(id, -ENXIO, CONN_PRIV_LEN);
			return;
		}
		if (s)
			sess_close(s, "path reconnects with a new recon_cnt");
		s = sess_new(p, d, pd + 28, recon_cnt, cid_num);
		if (!s) {
			reject_destroy(id, -ENOMEM, CONN_PRIV_LEN);
			return;
		}
	} else if (s->closing || s->cid_num != cid_num || s->con[cid] ||
		   s->dev != d) {
		say("error: session %s: cid %u not acceptable (closing %d cid_num %u, cid present %d)",
		    s->tag, cid, s->closing, s->cid_num, !!s->con[cid]);
		reject_destroy(id, -ECONNRESET, CONN_PRIV_LEN);
		return;
	}

	c = conn_alloc(id);
	if (!c) {
		reject_destroy(id, -ENOMEM, CONN_PRIV_LEN);
		if (!s->nconns)
			sess_close(s, "out of memory");
		return;
	}
	c->sess = s;
	c->dev = d;
	c->cid = cid;
	s->con[cid] = c;
	s->nconns++;
	if (conn_setup(c)) {
		do_reject(id, -ENOMEM, CONN_PRIV_LEN);
		sess_close(s, "connection setup failed");
		conn_destroy(c);
		return;
	}

	rlen = build_conn_rsp(s, rsp);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = rsp;
	cp.private_data_len = rlen;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		say("error: c%u rdma_accept: %s", c->seq, strerror(errno));
		sess_close(s, "accept failed");
		conn_destroy(c);
		return;
	}
	c->state = CS_ACCEPTED;
	say("accept c%u cid %u sess %s: magic %#x version %#x errno %d qd %u max_io %u max_hdr %u flags %#x (%zu bytes)",
	    c->seq, cid, s->tag, get16(rsp), get16(rsp + 2),
	    (int16_t)get16(rsp + 4), get16(rsp + 6), get32(rsp + 8),
	    get32(rsp + 12), get32(rsp + 16), rlen);
	switch (cur_case()) {
	case C_RSP_BAD_MAGIC: case C_RSP_BAD_VERSION: case C_RSP_MINOR_VERSION:
	case C_RSP_ERRNO: case C_RSP_SHORT: case C_RSP_QD0: case C_RSP_QD_MAX:
	case C_RSP_MAXIO0: case C_RSP_MAXIO_MISALIGNED: case C_RSP_MAXIO_HUGE:
	case C_RSP_HDR0: case C_RSP_CHUNK_OVERFLOW: case C_RSP_FLAGS_JUNK:
		hostile("conn_rsp %s", cases[opt.hcase].name);
		break;
	case C_RSP_QD_CHANGES:
		if (s->adv_qd != opt.qd)
			hostile("queue_depth %u on reconnect (first session: %u)",
				s->adv_qd, opt.qd);
		break;
	case C_DISC_AT_CID1:
		if (cid == 1) {
			hostile("accepted cid 1, now disconnecting the session");
			sess_close(s, "hostile disconnect-at-cid1");
		}
		break;
	default:
		break;
	}
}

static void on_established(struct conn *c)
{
	c->state = CS_ESTABLISHED;
	say("ESTABLISHED c%u cid %u", c->seq, c->cid);
	if (c->disconnecting) {
		do_rdma_disconnect(c);
		return;
	}
	if (is(C_DISC_AFTER_ACCEPT_CID0) && c->cid == 0) {
		hostile("disconnecting cid 0 right after ESTABLISHED");
		conn_disconnect(c);
	}
}

static void cm_events(void)
{
	enum rdma_cm_event_type type;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id, *ev_listen;
	uint8_t pd[256];
	unsigned int plen;
	struct conn *c;
	int status;

	while (!rdma_get_cm_event(ech, &ev)) {
		type = ev->event;
		id = ev->id;
		ev_listen = ev->listen_id;
		status = ev->status;
		plen = 0;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->param.conn.private_data) {
			plen = ev->param.conn.private_data_len;
			if (plen > sizeof(pd))
				plen = sizeof(pd);
			memcpy(pd, ev->param.conn.private_data, plen);
		}
		/* ack first: rdma_destroy_id waits for unacked events */
		rdma_ack_cm_event(ev);

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			cur_good = good_listen_id && ev_listen == good_listen_id;
			on_connect_request(id, pd, plen);
			continue;
		}
		c = id == listen_id || id == good_listen_id ? NULL : id->context;
		if (!c) {
			say("cm event %s on the listener (status %d)",
			    rdma_event_str(type), status);
			continue;
		}
		cur_good = c->sess && c->sess->good;
		switch (type) {
		case RDMA_CM_EVENT_ESTABLISHED:
			on_established(c);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_ADDR_CHANGE:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			say("%s c%u cid %u (status %d)",
			    type == RDMA_CM_EVENT_DISCONNECTED ? "DISCONNECTED" :
			    rdma_event_str(type), c->seq, c->cid, status);
			if (c->sess)
				sess_close(c->sess, "a connection went down");
			conn_destroy(c);
			break;
		default:
			say("cm event %s on c%u ignored (status %d)",
			    rdma_event_str(type), c->seq, status);
			break;
		}
	}
	if (errno != EAGAIN)
		say("error: rdma_get_cm_event: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Timers                                                               */

static void hb_flood(struct sess *s, struct conn *c)
{
	struct ibv_send_wr wr[32];
	unsigned int n, i;

	poll_send(c);
	while (s->flood_left && c->sq_out < c->max_send && !c->disc_sent) {
		n = c->max_send - c->sq_out;
		if (n > 32)
			n = 32;
		if (n > s->flood_left)
			n = s->flood_left;
		for (i = 0; i < n; i++)
			wr_imm(&wr[i], (uint32_t)IMM_HB_MSG << 28);
		if (post_chain(c, wr, n, "hb-flood"))
			break;
		if (!s->flood_logged) {
			s->flood_logged = 1;
			hostile("hb-flood: sending %u HB_MSG on cid 0",
				FLOOD_COUNT);
		}
		s->flood_left -= n;
		if (!s->flood_left)
			hostile("hb-flood: all %u HB_MSG posted", FLOOD_COUNT);
		poll_send(c);
	}
}

static void timers(void)
{
	uint64_t now = now_ms();
	struct conn *c0, *hc;
	struct sess *s;

	for (s = sesss; s; s = s->next) {
		if (s->closing)
			continue;
		cur_good = s->good;
		c0 = s->con[0];
		if (!c0 || c0->state != CS_ESTABLISHED || c0->disconnecting)
			continue;
		if (s->info_pending && now >= s->info_at) {
			s->info_pending = 0;
			hostile("sending the delayed INFO_RSP");
			send_info_rsp(s);
		}
		if (!s->info_done || s->closing || is(C_HB_SILENT))
			continue;
		if (now >= s->next_hb) {
			s->next_hb = now + HB_INTERVAL_MS;
			hc = c0;
			if (is(C_HB_ON_IO_CON) && s->cid_num > 1 && s->con[1] &&
			    s->con[1]->state == CS_ESTABLISHED) {
				hc = s->con[1];
				hostile("HB_MSG on cid 1");
			}
			send_imm(hc, (uint32_t)IMM_HB_MSG << 28, "HB_MSG");
		}
		if (is(C_HB_ACK_UNSOLICITED) && now >= s->next_unsol) {
			s->next_unsol = now + UNSOL_ACK_MS;
			if (!send_imm(c0, (uint32_t)IMM_HB_ACK << 28,
				      "unsolicited HB_ACK") &&
			    s->unsol_cnt++ % 50 == 0)
				hostile("unsolicited HB_ACK #%lu", s->unsol_cnt);
		}
		if (s->flood_left)
			hb_flood(s, c0);
	}
}

/* ------------------------------------------------------------------ */
/* Setup, main loop, teardown                                           */

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int listen_on(const char *addr, struct rdma_cm_id **idp)
{
	struct addrinfo hints, *ai;
	int ret;

	if (rdma_create_id(ech, idp, NULL, RDMA_PS_TCP)) {
		say("error: rdma_create_id: %s", strerror(errno));
		*idp = NULL;
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	ret = getaddrinfo(addr, opt.port, &hints, &ai);
	if (ret) {
		say("error: address %s port %s: %s", addr, opt.port,
		    gai_strerror(ret));
		return -1;
	}
	ret = rdma_bind_addr(*idp, ai->ai_addr);
	freeaddrinfo(ai);
	if (ret) {
		say("error: rdma_bind_addr(%s:%s): %s", addr, opt.port,
		    strerror(errno));
		return -1;
	}
	if (rdma_listen(*idp, 64)) {
		say("error: rdma_listen: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int listen_setup(void)
{
	int fl;

	ech = rdma_create_event_channel();
	if (!ech) {
		say("error: rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	fl = fcntl(ech->fd, F_GETFL);
	if (fl < 0 || fcntl(ech->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		say("error: fcntl(cm channel): %s", strerror(errno));
		return -1;
	}
	if (listen_on(opt.addr, &listen_id))
		return -1;
	if (opt.good_addr && listen_on(opt.good_addr, &good_listen_id))
		return -1;
	return 0;
}

static void teardown(void)
{
	struct path *p;
	struct sess *s;
	struct conn *c;

	for (s = sesss; s; s = s->next)
		s->closing = 1;
	for (c = conns; c; c = c->next)
		if (c->state == CS_ESTABLISHED)
			do_rdma_disconnect(c);
	while (conns)
		conn_destroy(conns);
	while (sesss)
		sess_free(sesss);
	while ((p = paths)) {
		paths = p->next;
		free(p);
	}
	dev_free_all();
	if (listen_id && rdma_destroy_id(listen_id))
		say("error: rdma_destroy_id(listener): %s", strerror(errno));
	listen_id = NULL;
	if (good_listen_id && rdma_destroy_id(good_listen_id))
		say("error: rdma_destroy_id(good listener): %s", strerror(errno));
	good_listen_id = NULL;
	if (ech)
		rdma_destroy_event_channel(ech);
	ech = NULL;
}

static int run(void)
{
	struct pollfd pfd[1 + MAX_DEVS];
	uint64_t end = now_ms() + (uint64_t)opt.timeout * 1000;
	struct dev *d;
	struct conn *c;
	int n, ret;

	while (!stop_flag) {
		if (now_ms() >= end) {
			say("timeout of %d s reached", opt.timeout);
			break;
		}
		n = 0;
		pfd[n].fd = ech->fd;
		pfd[n++].events = POLLIN;
		for (d = devs; d && n < 1 + MAX_DEVS; d = d->next) {
			pfd[n].fd = d->ch->fd;
			pfd[n++].events = POLLIN;
		}
		ret = poll(pfd, n, 20);
		if (ret < 0 && errno != EINTR) {
			say("error: poll: %s", strerror(errno));
			return 1;
		}
		cm_events();
		for (d = devs; d; d = d->next)
			cq_events(d);
		for (c = conns; c; c = c->next)
			poll_conn(c);
		timers();
	}
	if (stop_flag)
		say("signal received, exiting");
	return 0;
}

static void usage(FILE *f)
{
	int i;

	fprintf(f,
		"usage: rtrs-hostile-srv --addr IP [--port N] --case NAME [--qd N]\n"
		"         [--max-io N] [--max-hdr N] [--new-rkey] [--timeout SEC]\n"
		"         [--expect-sess NAME] [--also-answer] [--good-addr IP]\n"
		"       rtrs-hostile-srv --list\n\n"
		"cases:\n");
	for (i = 0; i < NR_CASES; i++)
		fprintf(f, "  %-30s %-8s %s\n", cases[i].name, cases[i].phase,
			cases[i].what);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || *v > max) {
		fprintf(stderr, "bad number '%s' (max %lu)\n", s, max);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "case", required_argument, NULL, 'c' },
		{ "qd", required_argument, NULL, 'q' },
		{ "max-io", required_argument, NULL, 'i' },
		{ "max-hdr", required_argument, NULL, 'H' },
		{ "new-rkey", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "expect-sess", required_argument, NULL, 'e' },
		{ "also-answer", no_argument, NULL, 'A' },
		{ "good-addr", required_argument, NULL, 'g' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cname = NULL;
	unsigned long v;
	int o, i;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'a':
			opt.addr = optarg;
			break;
		case 'p':
			if (parse_uint(optarg, 65535, &v))
				return 2;
			opt.port = optarg;
			break;
		case 'c':
			cname = optarg;
			break;
		case 'q':
			if (parse_uint(optarg, 65535, &v) || !v)
				return 2;
			opt.qd = v;
			break;
		case 'i':
			if (parse_uint(optarg, 0xffffffffu, &v))
				return 2;
			opt.max_io = v;
			break;
		case 'H':
			if (parse_uint(optarg, 0xffffffffu, &v))
				return 2;
			opt.max_hdr = v;
			break;
		case 'n':
			opt.new_rkey = 1;
			break;
		case 't':
			if (parse_uint(optarg, 1000000, &v))
				return 2;
			opt.timeout = v;
			break;
		case 'e':
			opt.expect_sess = optarg;
			break;
		case 'A':
			opt.also_answer = 1;
			break;
		case 'g':
			opt.good_addr = optarg;
			break;
		case 'l':
			for (i = 0; i < NR_CASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !opt.addr || !cname) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < NR_CASES; i++)
		if (!strcmp(cname, cases[i].name))
			break;
	if (i == NR_CASES) {
		fprintf(stderr, "unknown case '%s' (--list shows them)\n", cname);
		return 2;
	}
	opt.hcase = i;
	if ((uint64_t)opt.max_io + opt.max_hdr == 0 ||
	    (uint64_t)opt.max_io + opt.max_hdr > IMM_PAYL_MASK ||
	    ((uint64_t)opt.max_io + opt.max_hdr) * opt.qd > MAX_BACKED) {
		fprintf(stderr, "qd * (max-io + max-hdr) must be in (0, %lu] and a chunk below 2^28\n",
			MAX_BACKED);
		return 2;
	}
	if (opt.max_hdr < 8 + 16)
		fprintf(stderr, "note: max-hdr %u cannot hold a READ header\n",
			opt.max_hdr);
	return -1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int ret;

	ret = parse_args(argc, argv);
	if (ret >= 0)
		return ret;
	if ((is(C_RKEY_BAD_BUFID) || is(C_RKEY_SHORT) ||
	     is(C_RKEY_WRONG_TYPE)) && !opt.new_rkey) {
		opt.new_rkey = 1;
		say("note: case %s implies --new-rkey", cases[opt.hcase].name);
	}
	if (is(C_INFO_SESSNAME) && !opt.expect_sess)
		say("note: info-sessname without --expect-sess only logs the name");

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	say("case %s: %s", cases[opt.hcase].name, cases[opt.hcase].what);
	if (listen_setup()) {
		teardown();
		return 1;
	}
	say("listening on %s port %s (qd %u max_io %u max_hdr %u%s)%s%s",
	    opt.addr, opt.port, opt.qd, opt.max_io, opt.max_hdr,
	    opt.new_rkey ? " new-rkey" : "",
	    opt.good_addr ? ", good paths on " : "",
	    opt.good_addr ? opt.good_addr : "");
	ret = run();
	teardown();
	say("exit %d", ret);
	return ret;
}
