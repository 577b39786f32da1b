// SPDX-License-Identifier: GPL-2.0
/*
 * rnbd-client-rs: block layer inlines and macros for Rust, the gendisk's
 * block_device_operations, and the sysfs plumbing of /sys/class/rnbd-client
 * and /sys/block/rnbdN/rnbd/. Every decision is made in Rust (the extern
 * functions of rnbd_rs.h); this file only adapts calling conventions.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/hdreg.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "rnbd_rs.h"

const u8 rnbd_rs_sts_ok = (__force u8)BLK_STS_OK;
const u8 rnbd_rs_sts_ioerr = (__force u8)BLK_STS_IOERR;
const u8 rnbd_rs_sts_resource = (__force u8)BLK_STS_RESOURCE;
const u8 rnbd_rs_sts_notsupp = (__force u8)BLK_STS_NOTSUPP;
const u32 rnbd_rs_feat_write_cache = (__force u32)BLK_FEAT_WRITE_CACHE;
const u32 rnbd_rs_feat_fua = (__force u32)BLK_FEAT_FUA;

/* Minors per disk: the disk and 63 partitions (RNBD_PART_BITS 6). */
#define RNBD_RS_PART_BITS 6

void *rnbd_rs_rq_to_pdu(struct request *rq)
{
	return blk_mq_rq_to_pdu(rq);
}

struct request *rnbd_rs_rq_from_pdu(void *pdu)
{
	return blk_mq_rq_from_pdu(pdu);
}

u32 rnbd_rs_rq_op(struct request *rq)
{
	return (__force u32)req_op(rq);
}

bool rnbd_rs_rq_is_sync(struct request *rq)
{
	return op_is_sync(rq->cmd_flags);
}

bool rnbd_rs_rq_is_flush(struct request *rq)
{
	return op_is_flush(rq->cmd_flags);
}

bool rnbd_rs_rq_is_write(struct request *rq)
{
	return rq_data_dir(rq) == WRITE;
}

u16 rnbd_rs_rq_ioprio(struct request *rq)
{
	return req_get_ioprio(rq);
}

u64 rnbd_rs_rq_pos(struct request *rq)
{
	return blk_rq_pos(rq);
}

u32 rnbd_rs_rq_bytes(struct request *rq)
{
	return blk_rq_bytes(rq);
}

u16 rnbd_rs_rq_nr_phys_segments(struct request *rq)
{
	return blk_rq_nr_phys_segments(rq);
}

int rnbd_rs_rq_map_sg(struct request *rq, struct scatterlist *sgl)
{
	return blk_rq_map_sg(rq->q, rq, sgl);
}

void *rnbd_rs_rq_queuedata(struct request *rq)
{
	return rq->q->queuedata;
}

void *rnbd_rs_hctx_queuedata(struct blk_mq_hw_ctx *hctx)
{
	return hctx->queue->queuedata;
}

unsigned long rnbd_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rnbd_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

static int rnbd_rs_major;

/* The module's own queue: its exit waits for what is queued on it. */
struct workqueue_struct *rnbd_rs_alloc_wq(void)
{
	return alloc_workqueue("rnbd_clt_rs_wq", 0, 0);
}

unsigned int rnbd_rs_num_online_cpus(void)
{
	return num_online_cpus();
}

unsigned int rnbd_rs_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

void rnbd_rs_disk_uevent(struct gendisk *gd, bool online)
{
	kobject_uevent(&disk_to_dev(gd)->kobj, online ? KOBJ_ONLINE : KOBJ_OFFLINE);
}

int rnbd_rs_register_blkdev(const char *name)
{
	rnbd_rs_major = register_blkdev(0, name);
	return rnbd_rs_major;
}

struct gendisk *rnbd_rs_alloc_disk(struct blk_mq_tag_set *set,
				   struct queue_limits *lim, void *queuedata)
{
	return blk_mq_alloc_disk(set, lim, queuedata);
}

static int rnbd_rs_open(struct gendisk *disk, blk_mode_t mode)
{
	if (get_disk_ro(disk) && (mode & BLK_OPEN_WRITE))
		return -EPERM;
	return rnbd_rs_disk_open(disk->private_data, mode & BLK_OPEN_WRITE);
}

static void rnbd_rs_release(struct gendisk *disk)
{
	rnbd_rs_disk_release(disk->private_data);
}

static int rnbd_rs_getgeo(struct block_device *bdev, struct hd_geometry *geo)
{
	geo->cylinders = rnbd_rs_disk_geo_size(bdev->bd_disk->private_data) >> 6;
	geo->heads = 4;
	geo->sectors = 16;
	geo->start = 0;
	return 0;
}

static const struct block_device_operations rnbd_rs_fops = {
	.owner = THIS_MODULE,
	.open = rnbd_rs_open,
	.release = rnbd_rs_release,
	.getgeo = rnbd_rs_getgeo,
};

int rnbd_rs_add_disk(struct gendisk *gd, int major, int idx, u64 nsectors,
		     bool ro, void *dev)
{
	gd->major = major;
	gd->first_minor = idx << RNBD_RS_PART_BITS;
	gd->minors = 1 << RNBD_RS_PART_BITS;
	gd->fops = &rnbd_rs_fops;
	gd->private_data = dev;
	snprintf(gd->disk_name, sizeof(gd->disk_name), "rnbd%d", idx);
	set_capacity(gd, nsectors);
	if (ro)
		set_disk_ro(gd, true);
	return add_disk(gd);
}

/* --- /sys/class/rnbd-client/ctl ------------------------------------------ */

static const struct class rnbd_rs_class = {
	.name = "rnbd-client",
};

struct rnbd_rs_ctl {
	struct device *dev;
	struct kobject *devices;
};

/* ctl/devices/, for the links; set while the ctl device exists. */
static struct kobject *rnbd_rs_devices;

static ssize_t map_device_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return rnbd_rs_map_device_show(buf);
}

static ssize_t map_device_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	return rnbd_rs_map_device_store(dev_get_drvdata(dev), buf, count);
}

static DEVICE_ATTR_RW(map_device);

static struct attribute *rnbd_rs_ctl_attrs[] = {
	&dev_attr_map_device.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_rs_ctl);

struct rnbd_rs_ctl *rnbd_rs_ctl_create(void *clt)
{
	struct rnbd_rs_ctl *ctl;
	int err;

	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL);
	if (!ctl)
		return ERR_PTR(-ENOMEM);
	err = class_register(&rnbd_rs_class);
	if (err)
		goto free;
	ctl->dev = device_create_with_groups(&rnbd_rs_class, NULL, MKDEV(0, 0),
					     clt, rnbd_rs_ctl_groups, "ctl");
	if (IS_ERR(ctl->dev)) {
		err = PTR_ERR(ctl->dev);
		goto unregister;
	}
	ctl->devices = kobject_create_and_add("devices", &ctl->dev->kobj);
	if (!ctl->devices) {
		err = -ENOMEM;
		goto destroy;
	}
	rnbd_rs_devices = ctl->devices;
	return ctl;
destroy:
	device_destroy(&rnbd_rs_class, MKDEV(0, 0));
unregister:
	class_unregister(&rnbd_rs_class);
free:
	kfree(ctl);
	return ERR_PTR(err);
}

/*
 * map_device goes first, which waits for a store still running (it may link
 * into devices/), then devices/ with its links, then the device.
 */
void rnbd_rs_ctl_destroy(struct rnbd_rs_ctl *ctl)
{
	device_remove_groups(ctl->dev, rnbd_rs_ctl_groups);
	rnbd_rs_devices = NULL;
	kobject_del(ctl->devices);
	kobject_put(ctl->devices);
	device_destroy(&rnbd_rs_class, MKDEV(0, 0));
	class_unregister(&rnbd_rs_class);
	kfree(ctl);
}

int rnbd_rs_ctl_link(struct gendisk *gd, const char *name)
{
	if (!rnbd_rs_devices)
		return -ENODEV;
	return sysfs_create_link(rnbd_rs_devices, &disk_to_dev(gd)->kobj, name);
}

/* After rnbd_rs_ctl_destroy() the links went with devices/. */
void rnbd_rs_ctl_unlink(const char *name)
{
	if (rnbd_rs_devices)
		sysfs_remove_link(rnbd_rs_devices, name);
}

/* --- /sys/block/rnbdN/rnbd/ ---------------------------------------------- */

struct rnbd_rs_dev_kobj {
	struct kobject kobj;
	void *dev;
};

struct rnbd_rs_dev_attr {
	struct kobj_attribute kattr;
	int id;
};

static ssize_t rnbd_rs_dev_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct rnbd_rs_dev_kobj *dk =
		container_of(kobj, struct rnbd_rs_dev_kobj, kobj);

	return rnbd_rs_dev_attr_show(dk->dev,
		container_of(attr, struct rnbd_rs_dev_attr, kattr)->id, buf);
}

/*
 * A store may wait for the server (unmap's CLOSE, remap's OPEN) after its
 * file is gone (unmap removes it first): it holds the module meanwhile.
 */
static ssize_t rnbd_rs_dev_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	struct rnbd_rs_dev_kobj *dk =
		container_of(kobj, struct rnbd_rs_dev_kobj, kobj);
	ssize_t ret;

	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	ret = rnbd_rs_dev_attr_store(dk->dev,
		container_of(attr, struct rnbd_rs_dev_attr, kattr)->id,
		buf, count, &attr->attr);
	module_put(THIS_MODULE);
	return ret;
}

#define RNBD_RS_DEV_ATTR(_name, _mode, _store, _ID)			\
static struct rnbd_rs_dev_attr rnbd_rs_da_##_name = {			\
	.kattr = __ATTR(_name, _mode, rnbd_rs_dev_show, _store),	\
	.id = RNBD_RS_DA_##_ID,						\
}

RNBD_RS_DEV_ATTR(unmap_device, 0644, rnbd_rs_dev_store, UNMAP_DEVICE);
RNBD_RS_DEV_ATTR(resize, 0644, rnbd_rs_dev_store, RESIZE);
RNBD_RS_DEV_ATTR(remap_device, 0644, rnbd_rs_dev_store, REMAP_DEVICE);
RNBD_RS_DEV_ATTR(mapping_path, 0444, NULL, MAPPING_PATH);
RNBD_RS_DEV_ATTR(state, 0444, NULL, STATE);
RNBD_RS_DEV_ATTR(session, 0444, NULL, SESSION);
RNBD_RS_DEV_ATTR(access_mode, 0444, NULL, ACCESS_MODE);
RNBD_RS_DEV_ATTR(nr_poll_queues, 0444, NULL, NR_POLL_QUEUES);

static struct attribute *rnbd_rs_dev_attrs[] = {
	&rnbd_rs_da_unmap_device.kattr.attr,
	&rnbd_rs_da_resize.kattr.attr,
	&rnbd_rs_da_remap_device.kattr.attr,
	&rnbd_rs_da_mapping_path.kattr.attr,
	&rnbd_rs_da_state.kattr.attr,
	&rnbd_rs_da_session.kattr.attr,
	&rnbd_rs_da_access_mode.kattr.attr,
	&rnbd_rs_da_nr_poll_queues.kattr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rnbd_rs_dev);

static void rnbd_rs_dev_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct rnbd_rs_dev_kobj, kobj));
}

static const struct kobj_type rnbd_rs_dev_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = rnbd_rs_dev_groups,
	.release = rnbd_rs_dev_kobj_release,
};

/* rnbdN/rnbd/, announced with the disk's online uevent. */
struct rnbd_rs_dev_kobj *rnbd_rs_dev_kobj_create(struct gendisk *gd,
						 void *dev)
{
	struct kobject *parent = &disk_to_dev(gd)->kobj;
	struct rnbd_rs_dev_kobj *dk;
	int err;

	dk = kzalloc(sizeof(*dk), GFP_KERNEL);
	if (!dk)
		return ERR_PTR(-ENOMEM);
	dk->dev = dev;
	err = kobject_init_and_add(&dk->kobj, &rnbd_rs_dev_ktype, parent,
				   "%s", "rnbd");
	/* The disk is online either way, as in C. */
	kobject_uevent(parent, KOBJ_ONLINE);
	if (err) {
		/* Its release frees it: one put, nothing else. */
		kobject_put(&dk->kobj);
		return ERR_PTR(err);
	}
	return dk;
}

/*
 * Takes rnbd/ out of sysfs: from its own unmap_device store (self), that
 * file goes first, as the store cannot wait for itself. No show or store
 * runs on it once this returns.
 */
void rnbd_rs_dev_kobj_destroy(struct rnbd_rs_dev_kobj *dk,
			      const struct attribute *self)
{
	if (self)
		sysfs_remove_file_self(&dk->kobj, self);
	kobject_del(&dk->kobj);
	kobject_put(&dk->kobj);
}
