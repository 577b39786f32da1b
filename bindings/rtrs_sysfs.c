// SPDX-License-Identifier: GPL-2.0
/*
 * Driver-core plumbing of /sys/class/rtrs-client/<sessname>/paths/<src@dst>/:
 * the session device (freed by its release callback) and one kobject per
 * path. Attribute contents come from Rust (rtrs_rs_path_state_show).
 */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "rtrs_helpers.h"

struct rtrs_rs_sess_dev {
	struct device dev;
	struct kobject *paths;
};

struct rtrs_rs_path_kobj {
	struct kobject kobj;
	struct kobject *stats;
	const void *path;
};

static void rtrs_rs_sess_dev_release(struct device *dev)
{
	kfree(container_of(dev, struct rtrs_rs_sess_dev, dev));
}

struct rtrs_rs_sess_dev *rtrs_rs_sess_dev_create(struct class *cls,
						 const char *name)
{
	struct rtrs_rs_sess_dev *sd;
	int err;

	sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return ERR_PTR(-ENOMEM);
	sd->dev.class = cls;
	sd->dev.release = rtrs_rs_sess_dev_release;
	device_initialize(&sd->dev);
	err = dev_set_name(&sd->dev, "%s", name);
	if (err)
		goto put;
	dev_set_uevent_suppress(&sd->dev, true);
	err = device_add(&sd->dev);
	if (err)
		goto put;
	sd->paths = kobject_create_and_add("paths", &sd->dev.kobj);
	if (!sd->paths) {
		err = -ENOMEM;
		device_del(&sd->dev);
		goto put;
	}
	dev_set_uevent_suppress(&sd->dev, false);
	kobject_uevent(&sd->dev.kobj, KOBJ_ADD);
	return sd;
put:
	put_device(&sd->dev);
	return ERR_PTR(err);
}

void rtrs_rs_sess_dev_destroy(struct rtrs_rs_sess_dev *sd)
{
	kobject_del(sd->paths);
	kobject_put(sd->paths);
	device_unregister(&sd->dev);
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_state_show(pk->path, buf);
}

static ssize_t cur_latency_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_cur_latency_show(pk->path, buf);
}

/* paths/<name>/stats/rdma: the stats kobject's parent is the path's. */
static ssize_t rdma_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj->parent, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_stats_rdma_show(pk->path, buf);
}

static struct kobj_attribute rtrs_rs_rdma_attr = __ATTR_RO(rdma);

static struct kobj_attribute rtrs_rs_state_attr = __ATTR_RO(state);
static struct kobj_attribute rtrs_rs_cur_latency_attr = __ATTR_RO(cur_latency);

static struct attribute *rtrs_rs_path_attrs[] = {
	&rtrs_rs_state_attr.attr,
	&rtrs_rs_cur_latency_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rtrs_rs_path);

static void rtrs_rs_path_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct rtrs_rs_path_kobj, kobj));
}

static const struct kobj_type rtrs_rs_path_ktype = {
	.sysfs_ops = &kobj_sysfs_ops,
	.release = rtrs_rs_path_release,
	.default_groups = rtrs_rs_path_groups,
};

struct rtrs_rs_path_kobj *rtrs_rs_path_kobj_create(struct rtrs_rs_sess_dev *sd,
						   const char *name,
						   const void *path)
{
	struct rtrs_rs_path_kobj *pk;
	int err;

	pk = kzalloc(sizeof(*pk), GFP_KERNEL);
	if (!pk)
		return ERR_PTR(-ENOMEM);
	pk->path = path;
	err = kobject_init_and_add(&pk->kobj, &rtrs_rs_path_ktype, sd->paths,
				   "%s", name);
	if (err) {
		kobject_put(&pk->kobj);
		return ERR_PTR(err);
	}
	pk->stats = kobject_create_and_add("stats", &pk->kobj);
	if (!pk->stats) {
		err = -ENOMEM;
		goto del;
	}
	err = sysfs_create_file(pk->stats, &rtrs_rs_rdma_attr.attr);
	if (err) {
		kobject_del(pk->stats);
		kobject_put(pk->stats);
		goto del;
	}
	kobject_uevent(&pk->kobj, KOBJ_ADD);
	return pk;
del:
	kobject_del(&pk->kobj);
	kobject_put(&pk->kobj);
	return ERR_PTR(err);
}

void rtrs_rs_path_kobj_destroy(struct rtrs_rs_path_kobj *pk)
{
	sysfs_remove_file(pk->stats, &rtrs_rs_rdma_attr.attr);
	kobject_del(pk->stats);
	kobject_put(pk->stats);
	kobject_del(&pk->kobj);
	kobject_put(&pk->kobj);
}
