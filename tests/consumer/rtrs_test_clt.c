// SPDX-License-Identifier: GPL-2.0
/*
 * rtrs_test_clt: a test-only user of the RTRS client API.
 *
 * Drives the seven rtrs_clt_* exports from a debugfs file so that tests
 * can open a session and issue READ/WRITE requests without rnbd. It binds
 * at load time to whichever RTRS client module is loaded.
 *
 * /sys/kernel/debug/rtrs_test_clt/ctl takes one command per write:
 *
 *   open sess=<name> path=[ip:]<dst>[@[ip:]<src>] [path=...] [port=1234]
 *        [delay=5] [attempts=-1] [poll=0]
 *   query
 *   io dir=read|write count=<n> len=<bytes> [usr=16] [timeout_ms=10000]
 *      [wait=0|1] [con=io|admin]
 *   wait [timeout_ms=10000]
 *   poll index=<i>
 *   close [timeout_ms=30000]
 *
 * Reading it shows the session, the counters and the last result line.
 *
 * Lifetime: every request that has been handed to the client holds a
 * reference on this module until its confirmation has run, so the module
 * cannot be removed (rmmod fails with EBUSY) while requests are
 * outstanding; conf_fn is never left pointing at freed code. Module exit
 * still waits for pending requests and, should any remain (only possible
 * with a forced unload), leaks the session instead of closing it.
 */

#define pr_fmt(fmt) "rtrs_test_clt: " fmt

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/wait.h>

#include "rtrs.h"

#define TC_MAX_PATHS		8
#define TC_NAME_LEN		64
#define TC_CMD_MAX		1024
#define TC_LINE_LEN		512
#define TC_NR_ERRS		8
#define TC_MAX_LEN		SZ_1M		/* data bytes per request */
#define TC_MAX_USR		16384		/* user header bytes */
#define TC_MAX_COUNT		1000000
#define TC_DEF_PORT		1234
#define TC_DEF_IO_TMO_MS	10000
#define TC_DEF_CLOSE_TMO_MS	30000
#define TC_EXIT_TMO_MS		30000

/* Counts per errno; errnos beyond the table go to @other. */
struct tc_errs {
	int err[TC_NR_ERRS];
	unsigned int cnt[TC_NR_ERRS];
	unsigned int other;
};

/* The requests of one io command; freed when the last one is done. */
struct tc_batch {
	refcount_t ref;
	atomic_t pending;
	unsigned int ok;	/* under tc.lock */
	struct tc_errs err;	/* under tc.lock */
};

#define TC_REQ_CONFIRMED	0

struct tc_req {
	refcount_t ref;		/* the poster's and the confirmation's */
	unsigned long flags;
	struct rtrs_clt_sess *sess;
	struct rtrs_permit *permit;
	struct tc_batch *batch;
	struct rtrs_clt_req_ops ops;
	unsigned int nr_sg;
	struct scatterlist sg[];
};

static struct {
	struct mutex cmd_mutex;		/* serialises ctl writes */
	spinlock_t lock;		/* counters and the fields read by ctl */
	wait_queue_head_t wq;		/* woken by each confirmation */
	struct rtrs_clt_sess *sess;	/* written under cmd_mutex and lock */
	char name[TC_NAME_LEN];
	int open_err;
	atomic_t reconnected;
	atomic_t disconnected;
	atomic_t link_other;
	atomic_t pending;
	unsigned int conf_ok;
	struct tc_errs conf_err;
	char last[TC_LINE_LEN];
	struct sockaddr_storage src[TC_MAX_PATHS];
	struct sockaddr_storage dst[TC_MAX_PATHS];
	struct rtrs_addr paths[TC_MAX_PATHS];
	struct dentry *dir;
} tc;

static void tc_errs_add(struct tc_errs *e, int err)
{
	int i;

	for (i = 0; i < TC_NR_ERRS; i++) {
		if (!e->cnt[i] || e->err[i] == err) {
			e->err[i] = err;
			e->cnt[i]++;
			return;
		}
	}
	e->other++;
}

static int tc_errs_fmt(const struct tc_errs *e, char *buf, size_t size)
{
	int i, n;

	n = scnprintf(buf, size, "[");
	for (i = 0; i < TC_NR_ERRS && e->cnt[i]; i++)
		n += scnprintf(buf + n, size - n, "%s%d:%u", i ? " " : "",
			       e->err[i], e->cnt[i]);
	if (e->other)
		n += scnprintf(buf + n, size - n, "%sother:%u", i ? " " : "",
			       e->other);
	n += scnprintf(buf + n, size - n, "]");
	return n;
}

/* Records the result line of a command and logs it. */
static __printf(1, 2) void tc_result(const char *fmt, ...)
{
	char line[TC_LINE_LEN];
	va_list args;

	va_start(args, fmt);
	vscnprintf(line, sizeof(line), fmt, args);
	va_end(args);

	spin_lock_irq(&tc.lock);
	strscpy(tc.last, line, sizeof(tc.last));
	spin_unlock_irq(&tc.lock);
	pr_info("%s\n", line);
}

static void tc_batch_put(struct tc_batch *b)
{
	if (refcount_dec_and_test(&b->ref))
		kfree(b);
}

static void tc_req_put(struct tc_req *req)
{
	unsigned int i;

	if (!refcount_dec_and_test(&req->ref))
		return;
	for (i = 0; i < req->nr_sg; i++)
		__free_page(sg_page(&req->sg[i]));
	tc_batch_put(req->batch);
	kfree(req);
	module_put(THIS_MODULE);
}

/* RTRS confirmation: any context, must not sleep. */
static void tc_conf(void *priv, int errno)
{
	struct tc_req *req = priv;
	struct tc_batch *b = req->batch;
	unsigned long flags;

	if (test_and_set_bit(TC_REQ_CONFIRMED, &req->flags)) {
		pr_err_ratelimited("request %p confirmed twice (errno %d)\n",
				   req, errno);
		return;
	}

	spin_lock_irqsave(&tc.lock, flags);
	if (errno) {
		tc_errs_add(&tc.conf_err, errno);
		tc_errs_add(&b->err, errno);
	} else {
		tc.conf_ok++;
		b->ok++;
	}
	spin_unlock_irqrestore(&tc.lock, flags);

	/* The permit goes back before pending drops, so close can follow. */
	rtrs_clt_put_permit(req->sess, req->permit);
	atomic_dec(&b->pending);
	atomic_dec(&tc.pending);
	wake_up_all(&tc.wq);
	tc_req_put(req);
}

static void tc_link_ev(void *priv, enum rtrs_clt_link_ev ev)
{
	switch (ev) {
	case RTRS_CLT_LINK_EV_RECONNECTED:
		atomic_inc(&tc.reconnected);
		pr_info("link_ev: reconnected\n");
		break;
	case RTRS_CLT_LINK_EV_DISCONNECTED:
		atomic_inc(&tc.disconnected);
		pr_info("link_ev: disconnected\n");
		break;
	default:
		atomic_inc(&tc.link_other);
		pr_warn("link_ev: unknown event %d\n", ev);
		break;
	}
}

/* Splits "key=value"; returns the value or NULL if there is no '='. */
static char *tc_split(char *tok, const char **key)
{
	char *eq = strchr(tok, '=');

	if (!eq)
		return NULL;
	*eq = '\0';
	*key = tok;
	return eq + 1;
}

static int tc_bad(const char *key, const char *val)
{
	if (val)
		pr_err("bad token '%s=%s'\n", key, val);
	else
		pr_err("bad token '%s'\n", key);
	return -EINVAL;
}

/* [ip:]a.b.c.d into an AF_INET address with port 0 */
static int tc_parse_ip(char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	const char *end;
	size_t len;

	if (!strncmp(s, "ip:", 3))
		s += 3;
	len = strlen(s);
	memset(ss, 0, sizeof(*ss));
	if (!len || !in4_pton(s, len, (u8 *)&sin->sin_addr.s_addr, -1, &end) ||
	    end != s + len)
		return -EINVAL;
	sin->sin_family = AF_INET;
	return 0;
}

/* path=<dst>[@<src>]; the source gets port 0, as rtrs_addr_to_sockaddr. */
static int tc_parse_path(const char *val, int i)
{
	char buf[48], *src;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	src = strchr(buf, '@');
	if (src)
		*src++ = '\0';
	if (tc_parse_ip(buf, &tc.dst[i]))
		return -EINVAL;
	tc.paths[i].dst = &tc.dst[i];
	tc.paths[i].src = NULL;
	if (src) {
		if (tc_parse_ip(src, &tc.src[i]))
			return -EINVAL;
		tc.paths[i].src = &tc.src[i];
	}
	return 0;
}

static int tc_missing(const char *cmd, const char *key)
{
	pr_err("%s: missing %s=\n", cmd, key);
	return -EINVAL;
}

static int tc_cmd_open(char *args)
{
	char name[TC_NAME_LEN] = "";
	struct rtrs_clt_ops ops = {
		.priv = &tc,
		.link_ev = tc_link_ev,
	};
	struct rtrs_clt_sess *sess;
	u8 delay = 5;
	s16 attempts = -1;
	u32 poll = 0;
	u16 port = TC_DEF_PORT;
	int nr_paths = 0, i, err;
	const char *key;
	char *tok, *val;

	while ((tok = strsep(&args, " \t\n"))) {
		if (!*tok)
			continue;
		val = tc_split(tok, &key);
		if (!val)
			return tc_bad(tok, NULL);
		if (!strcmp(key, "sess")) {
			if (!*val || strscpy(name, val, sizeof(name)) < 0)
				return tc_bad(key, val);
		} else if (!strcmp(key, "path")) {
			if (nr_paths == TC_MAX_PATHS ||
			    tc_parse_path(val, nr_paths))
				return tc_bad(key, val);
			nr_paths++;
		} else if (!strcmp(key, "port")) {
			if (kstrtou16(val, 0, &port))
				return tc_bad(key, val);
		} else if (!strcmp(key, "delay")) {
			if (kstrtou8(val, 0, &delay))
				return tc_bad(key, val);
		} else if (!strcmp(key, "attempts")) {
			if (kstrtos16(val, 0, &attempts))
				return tc_bad(key, val);
		} else if (!strcmp(key, "poll")) {
			if (kstrtou32(val, 0, &poll))
				return tc_bad(key, val);
		} else {
			return tc_bad(key, val);
		}
	}
	if (!*name)
		return tc_missing("open", "sess");
	if (!nr_paths)
		return tc_missing("open", "path");
	/* Set last, so that port= may follow the paths. */
	for (i = 0; i < nr_paths; i++)
		((struct sockaddr_in *)&tc.dst[i])->sin_port = htons(port);

	if (tc.sess) {
		pr_err("open: session %s is already open\n", tc.name);
		return -EBUSY;
	}

	atomic_set(&tc.reconnected, 0);
	atomic_set(&tc.disconnected, 0);
	atomic_set(&tc.link_other, 0);
	spin_lock_irq(&tc.lock);
	tc.conf_ok = 0;
	memset(&tc.conf_err, 0, sizeof(tc.conf_err));
	spin_unlock_irq(&tc.lock);

	sess = rtrs_clt_open(&ops, name, tc.paths, nr_paths, port, 0, delay,
			     attempts, poll);
	if (IS_ERR_OR_NULL(sess)) {
		err = sess ? PTR_ERR(sess) : -EFAULT;
		spin_lock_irq(&tc.lock);
		tc.open_err = err;
		spin_unlock_irq(&tc.lock);
		tc_result("open: sess=%s err=%d%s", name, err,
			  sess ? "" : " (NULL returned)");
		return err;
	}

	spin_lock_irq(&tc.lock);
	tc.sess = sess;
	tc.open_err = 0;
	strscpy(tc.name, name, sizeof(tc.name));
	spin_unlock_irq(&tc.lock);
	tc_result("open: sess=%s paths=%d ok", name, nr_paths);
	return 0;
}

static int tc_no_args(const char *cmd, char *args)
{
	char *tok;

	while ((tok = strsep(&args, " \t\n")))
		if (*tok)
			return tc_bad(tok, NULL);
	if (!tc.sess) {
		pr_err("%s: no session\n", cmd);
		return -ENOTCONN;
	}
	return 0;
}

static int tc_cmd_query(char *args)
{
	struct rtrs_attrs attr = {};
	int err;

	err = tc_no_args("query", args);
	if (err)
		return err;
	err = rtrs_clt_query(tc.sess, &attr);
	if (err)
		tc_result("query: err=%d", err);
	else
		tc_result("query: queue_depth=%u max_io_size=%u max_segments=%u",
			  attr.queue_depth, attr.max_io_size, attr.max_segments);
	return 0;
}

/* A request of batch b with len bytes of data in order-0 pages. */
static struct tc_req *tc_req_alloc(struct tc_batch *b, size_t len, bool fill)
{
	unsigned int nr = DIV_ROUND_UP(len, PAGE_SIZE), i, j;
	struct tc_req *req;
	size_t rem = len;

	req = kzalloc(struct_size(req, sg, nr), GFP_KERNEL);
	if (!req)
		return NULL;
	if (nr)
		sg_init_table(req->sg, nr);
	for (i = 0; i < nr; i++) {
		size_t n = min_t(size_t, rem, PAGE_SIZE);
		struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		u8 *p;

		if (!page)
			goto err;
		sg_set_page(&req->sg[i], page, n, 0);
		req->nr_sg++;
		if (fill) {
			/* byte k of the data is k & 0xff; PAGE_SIZE % 256 == 0 */
			p = page_address(page);
			for (j = 0; j < n; j++)
				p[j] = j & 0xff;
		}
		rem -= n;
	}
	refcount_set(&req->ref, 1);
	req->batch = b;
	refcount_inc(&b->ref);
	__module_get(THIS_MODULE);
	return req;
err:
	for (i = 0; i < req->nr_sg; i++)
		__free_page(sg_page(&req->sg[i]));
	kfree(req);
	return NULL;
}

static int tc_cmd_io(char *args)
{
	char posterr[TC_LINE_LEN / 4], conferr[TC_LINE_LEN / 4];
	unsigned int count = 0, len = 0, usr = 16, tmo = TC_DEF_IO_TMO_MS;
	unsigned int posted = 0, nopermit = 0, i, ok;
	enum rtrs_clt_con_type con = RTRS_IO_CON;
	enum wait_type wait = RTRS_PERMIT_NOWAIT;
	bool have_count = false, have_len = false;
	struct tc_errs post_err = {};
	struct tc_errs err_snap;
	struct tc_batch *b;
	struct kvec vec;
	int dir = -1, err;
	const char *key;
	char *tok, *val;
	void *ubuf;

	while ((tok = strsep(&args, " \t\n"))) {
		if (!*tok)
			continue;
		val = tc_split(tok, &key);
		if (!val)
			return tc_bad(tok, NULL);
		if (!strcmp(key, "dir")) {
			if (!strcmp(val, "read"))
				dir = READ;
			else if (!strcmp(val, "write"))
				dir = WRITE;
			else
				return tc_bad(key, val);
		} else if (!strcmp(key, "count")) {
			if (kstrtouint(val, 0, &count) || count > TC_MAX_COUNT)
				return tc_bad(key, val);
			have_count = true;
		} else if (!strcmp(key, "len")) {
			if (kstrtouint(val, 0, &len) || len > TC_MAX_LEN)
				return tc_bad(key, val);
			have_len = true;
		} else if (!strcmp(key, "usr")) {
			if (kstrtouint(val, 0, &usr) || usr > TC_MAX_USR)
				return tc_bad(key, val);
		} else if (!strcmp(key, "timeout_ms")) {
			if (kstrtouint(val, 0, &tmo))
				return tc_bad(key, val);
		} else if (!strcmp(key, "wait")) {
			if (!strcmp(val, "0"))
				wait = RTRS_PERMIT_NOWAIT;
			else if (!strcmp(val, "1"))
				wait = RTRS_PERMIT_WAIT;
			else
				return tc_bad(key, val);
		} else if (!strcmp(key, "con")) {
			if (!strcmp(val, "io"))
				con = RTRS_IO_CON;
			else if (!strcmp(val, "admin"))
				con = RTRS_ADMIN_CON;
			else
				return tc_bad(key, val);
		} else {
			return tc_bad(key, val);
		}
	}
	if (dir < 0)
		return tc_missing("io", "dir");
	if (!have_count)
		return tc_missing("io", "count");
	if (!have_len)
		return tc_missing("io", "len");
	if (!tc.sess) {
		pr_err("io: no session\n");
		return -ENOTCONN;
	}

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	ubuf = kzalloc(max(usr, 1U), GFP_KERNEL);
	if (!b || !ubuf) {
		kfree(b);
		kfree(ubuf);
		return -ENOMEM;
	}
	refcount_set(&b->ref, 1);
	atomic_set(&b->pending, 0);

	for (i = 0; i < count; i++) {
		struct tc_req *req = tc_req_alloc(b, len, dir == WRITE);

		if (!req) {
			tc_errs_add(&post_err, -ENOMEM);
			continue;
		}
		req->sess = tc.sess;
		req->permit = rtrs_clt_get_permit(tc.sess, con, wait);
		if (!req->permit) {
			nopermit++;
			tc_req_put(req);
			continue;
		}
		req->ops.priv = req;
		req->ops.conf_fn = tc_conf;
		/* The confirmation's reference; conf_fn may run at once. */
		refcount_inc(&req->ref);
		atomic_inc(&b->pending);
		atomic_inc(&tc.pending);

		/* The header is copied by the client; one buffer serves all. */
		vec.iov_base = ubuf;
		vec.iov_len = usr;
		err = rtrs_clt_request(dir, &req->ops, tc.sess, req->permit,
				       &vec, 1, len, len ? req->sg : NULL,
				       req->nr_sg);
		if (err) {
			tc_errs_add(&post_err, err);
			if (test_and_set_bit(TC_REQ_CONFIRMED, &req->flags)) {
				/* conf_fn ran although the post failed */
				pr_err("io: request %p failed to post (%d) but was confirmed\n",
				       req, err);
			} else {
				rtrs_clt_put_permit(tc.sess, req->permit);
				atomic_dec(&b->pending);
				atomic_dec(&tc.pending);
				tc_req_put(req);
			}
		} else {
			posted++;
		}
		tc_req_put(req);
	}
	kfree(ubuf);

	if (tmo)
		wait_event_interruptible_timeout(tc.wq,
						 !atomic_read(&b->pending),
						 msecs_to_jiffies(tmo));

	spin_lock_irq(&tc.lock);
	ok = b->ok;
	err_snap = b->err;
	spin_unlock_irq(&tc.lock);
	tc_batch_put(b);

	tc_errs_fmt(&post_err, posterr, sizeof(posterr));
	tc_errs_fmt(&err_snap, conferr, sizeof(conferr));
	tc_result("io %s: posted=%u post_err=%s nopermit=%u ok=%u err=%s pending=%d",
		  dir == READ ? "read" : "write", posted, posterr, nopermit,
		  ok, conferr, atomic_read(&tc.pending));
	return 0;
}

/* Waits up to tmo ms for all requests; returns what is still pending. */
static int tc_wait_all(unsigned int tmo, bool intr)
{
	unsigned long j = msecs_to_jiffies(tmo);

	if (intr)
		wait_event_interruptible_timeout(tc.wq,
						 !atomic_read(&tc.pending), j);
	else
		wait_event_timeout(tc.wq, !atomic_read(&tc.pending), j);
	return atomic_read(&tc.pending);
}

static int tc_parse_tmo(char *args, unsigned int *tmo)
{
	const char *key;
	char *tok, *val;

	while ((tok = strsep(&args, " \t\n"))) {
		if (!*tok)
			continue;
		val = tc_split(tok, &key);
		if (!val)
			return tc_bad(tok, NULL);
		if (strcmp(key, "timeout_ms") || kstrtouint(val, 0, tmo))
			return tc_bad(key, val);
	}
	return 0;
}

static int tc_cmd_wait(char *args)
{
	unsigned int tmo = TC_DEF_IO_TMO_MS, ok;
	char conferr[TC_LINE_LEN / 2];
	struct tc_errs err_snap;
	int err, pending;

	err = tc_parse_tmo(args, &tmo);
	if (err)
		return err;
	pending = tc_wait_all(tmo, true);

	spin_lock_irq(&tc.lock);
	ok = tc.conf_ok;
	err_snap = tc.conf_err;
	spin_unlock_irq(&tc.lock);
	tc_errs_fmt(&err_snap, conferr, sizeof(conferr));
	tc_result("wait: pending=%d ok=%u err=%s", pending, ok, conferr);
	return 0;
}

static int tc_cmd_poll(char *args)
{
	unsigned int index = 0;
	bool have_index = false;
	const char *key;
	char *tok, *val;
	int ret;

	while ((tok = strsep(&args, " \t\n"))) {
		if (!*tok)
			continue;
		val = tc_split(tok, &key);
		if (!val)
			return tc_bad(tok, NULL);
		if (strcmp(key, "index") || kstrtouint(val, 0, &index))
			return tc_bad(key, val);
		have_index = true;
	}
	if (!have_index)
		return tc_missing("poll", "index");
	if (!tc.sess) {
		pr_err("poll: no session\n");
		return -ENOTCONN;
	}
	ret = rtrs_clt_rdma_cq_direct(tc.sess, index);
	tc_result("poll: index=%u ret=%d", index, ret);
	return 0;
}

static void tc_close_sess(void)
{
	struct rtrs_clt_sess *sess = tc.sess;

	rtrs_clt_close(sess);
	spin_lock_irq(&tc.lock);
	tc.sess = NULL;
	tc.name[0] = '\0';
	spin_unlock_irq(&tc.lock);
}

static int tc_cmd_close(char *args)
{
	unsigned int tmo = TC_DEF_CLOSE_TMO_MS;
	char name[TC_NAME_LEN];
	int err, pending;

	err = tc_parse_tmo(args, &tmo);
	if (err)
		return err;
	if (!tc.sess) {
		pr_err("close: no session\n");
		return -ENOTCONN;
	}
	pending = tc_wait_all(tmo, true);
	if (pending) {
		pr_err("close: %d requests still pending, not closing\n",
		       pending);
		tc_result("close: err=%d pending=%d", -EBUSY, pending);
		return -EBUSY;
	}
	strscpy(name, tc.name, sizeof(name));
	tc_close_sess();
	tc_result("close: sess=%s ok", name);
	return 0;
}

static ssize_t tc_ctl_write(struct file *file, const char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	char *buf, *args, *cmd;
	int err;

	if (!count || count >= TC_CMD_MAX)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);

	args = strim(buf);
	pr_info("cmd: %s\n", args);
	cmd = strsep(&args, " \t\n");

	mutex_lock(&tc.cmd_mutex);
	if (!strcmp(cmd, "open"))
		err = tc_cmd_open(args);
	else if (!strcmp(cmd, "query"))
		err = tc_cmd_query(args);
	else if (!strcmp(cmd, "io"))
		err = tc_cmd_io(args);
	else if (!strcmp(cmd, "wait"))
		err = tc_cmd_wait(args);
	else if (!strcmp(cmd, "poll"))
		err = tc_cmd_poll(args);
	else if (!strcmp(cmd, "close"))
		err = tc_cmd_close(args);
	else
		err = tc_bad(cmd, NULL);
	mutex_unlock(&tc.cmd_mutex);

	kfree(buf);
	return err ? err : count;
}

static ssize_t tc_ctl_read(struct file *file, char __user *ubuf,
			   size_t count, loff_t *ppos)
{
	char name[TC_NAME_LEN], last[TC_LINE_LEN], conferr[TC_LINE_LEN / 2];
	struct tc_errs err_snap;
	unsigned int ok;
	int open_err, n;
	bool open;
	ssize_t ret;
	char *buf;

	spin_lock_irq(&tc.lock);
	open = !!tc.sess;
	strscpy(name, tc.name, sizeof(name));
	open_err = tc.open_err;
	ok = tc.conf_ok;
	err_snap = tc.conf_err;
	strscpy(last, tc.last, sizeof(last));
	spin_unlock_irq(&tc.lock);
	tc_errs_fmt(&err_snap, conferr, sizeof(conferr));

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	n = scnprintf(buf, PAGE_SIZE,
		      "sess=%s\nopen_err=%d\nlink_ev: reconnected=%d disconnected=%d\npending=%d\nconfirmed: ok=%u err=%s\nlast: %s\n",
		      open ? name : "-", open_err,
		      atomic_read(&tc.reconnected),
		      atomic_read(&tc.disconnected),
		      atomic_read(&tc.pending), ok, conferr, last);
	ret = simple_read_from_buffer(ubuf, count, ppos, buf, n);
	kfree(buf);
	return ret;
}

static const struct file_operations tc_ctl_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = tc_ctl_read,
	.write = tc_ctl_write,
	.llseek = default_llseek,
};

static int __init tc_init(void)
{
	mutex_init(&tc.cmd_mutex);
	spin_lock_init(&tc.lock);
	init_waitqueue_head(&tc.wq);
	atomic_set(&tc.pending, 0);
	strscpy(tc.last, "-", sizeof(tc.last));

	tc.dir = debugfs_create_dir("rtrs_test_clt", NULL);
	if (IS_ERR(tc.dir))
		return PTR_ERR(tc.dir);
	debugfs_create_file("ctl", 0600, tc.dir, NULL, &tc_ctl_fops);
	pr_info("loaded\n");
	return 0;
}

static void __exit tc_exit(void)
{
	int pending;

	/* Waits for writers still inside ctl. */
	debugfs_remove(tc.dir);

	mutex_lock(&tc.cmd_mutex);
	if (tc.sess) {
		pending = tc_wait_all(TC_EXIT_TMO_MS, false);
		if (pending) {
			/* Exit cannot fail: leak the session, do not crash. */
			pr_err("exit: %d requests still pending, leaking session %s\n",
			       pending, tc.name);
		} else {
			pr_info("exit: closing session %s\n", tc.name);
			tc_close_sess();
		}
	}
	mutex_unlock(&tc.cmd_mutex);
	pr_info("unloaded\n");
}

module_init(tc_init);
module_exit(tc_exit);

MODULE_DESCRIPTION("RTRS client API test consumer (test only)");
MODULE_LICENSE("GPL");
