/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rnbd-client-rs: what its Rust needs from C that 6.12's Rust lacks (block
 * layer inlines and macros, the sysfs plumbing), and the Rust functions the
 * C side calls back.
 */
#ifndef RNBD_RS_H
#define RNBD_RS_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/kobject.h>

/* The files of /sys/block/rnbdN/rnbd/, in C's order. */
enum rnbd_rs_dev_attr_id {
	RNBD_RS_DA_UNMAP_DEVICE,
	RNBD_RS_DA_RESIZE,
	RNBD_RS_DA_REMAP_DEVICE,
	RNBD_RS_DA_MAPPING_PATH,
	RNBD_RS_DA_STATE,
	RNBD_RS_DA_SESSION,
	RNBD_RS_DA_ACCESS_MODE,
	RNBD_RS_DA_NR_POLL_QUEUES,
};

/* Block status codes (macros with casts in C). */
extern const u8 rnbd_rs_sts_ok;
extern const u8 rnbd_rs_sts_ioerr;
extern const u8 rnbd_rs_sts_resource;
extern const u8 rnbd_rs_sts_notsupp;
extern const u32 rnbd_rs_feat_write_cache;
extern const u32 rnbd_rs_feat_fua;

/* Block layer inlines. */
void *rnbd_rs_rq_to_pdu(struct request *rq);
struct request *rnbd_rs_rq_from_pdu(void *pdu);
u32 rnbd_rs_rq_op(struct request *rq);
bool rnbd_rs_rq_is_sync(struct request *rq);
bool rnbd_rs_rq_is_flush(struct request *rq);
bool rnbd_rs_rq_is_write(struct request *rq);
u16 rnbd_rs_rq_ioprio(struct request *rq);
u64 rnbd_rs_rq_pos(struct request *rq);
u32 rnbd_rs_rq_bytes(struct request *rq);
u16 rnbd_rs_rq_nr_phys_segments(struct request *rq);
int rnbd_rs_rq_map_sg(struct request *rq, struct scatterlist *sgl);
void *rnbd_rs_rq_queuedata(struct request *rq);
void *rnbd_rs_hctx_queuedata(struct blk_mq_hw_ctx *hctx);
unsigned long rnbd_rs_spin_lock_irqsave(spinlock_t *lock);
void rnbd_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
int rnbd_rs_register_blkdev(const char *name);
unsigned int rnbd_rs_num_online_cpus(void);
struct workqueue_struct *rnbd_rs_alloc_wq(void);
unsigned int rnbd_rs_nr_cpu_ids(void);
void rnbd_rs_disk_uevent(struct gendisk *gd, bool online);
struct gendisk *rnbd_rs_alloc_disk(struct blk_mq_tag_set *set,
				   struct queue_limits *lim, void *queuedata);
int rnbd_rs_add_disk(struct gendisk *gd, int major, int idx, u64 nsectors,
		     bool ro, void *dev);

/* sysfs: /sys/class/rnbd-client/ctl/{map_device,devices/}. */
struct rnbd_rs_ctl;
struct rnbd_rs_ctl *rnbd_rs_ctl_create(void *clt);
void rnbd_rs_ctl_destroy(struct rnbd_rs_ctl *ctl);
int rnbd_rs_ctl_link(struct gendisk *gd, const char *name);
void rnbd_rs_ctl_unlink(const char *name);

/* sysfs: /sys/block/rnbdN/rnbd/. */
struct rnbd_rs_dev_kobj;
struct rnbd_rs_dev_kobj *rnbd_rs_dev_kobj_create(struct gendisk *gd,
						 void *dev);
void rnbd_rs_dev_kobj_destroy(struct rnbd_rs_dev_kobj *dk,
			      const struct attribute *self);

/* Rust, called from the above. */
ssize_t rnbd_rs_map_device_show(char *buf);
ssize_t rnbd_rs_map_device_store(void *clt, const char *buf, size_t count);
ssize_t rnbd_rs_dev_attr_show(void *dev, int id, char *buf);
ssize_t rnbd_rs_dev_attr_store(void *dev, int id, const char *buf,
			       size_t count, const struct attribute *attr);
int rnbd_rs_disk_open(void *dev, bool write);
void rnbd_rs_disk_release(void *dev);
u64 rnbd_rs_disk_geo_size(void *dev);

#endif /* RNBD_RS_H */
