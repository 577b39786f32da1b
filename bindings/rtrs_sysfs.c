// SPDX-License-Identifier: GPL-2.0
/*
 * Driver-core plumbing of /sys/class/rtrs-client/<sessname>/paths/<src@dst>/:
 * the session device (freed by its release callback) and one kobject per
 * path. Attribute contents come from Rust (rtrs_rs_path_attr_show/_store,
 * rtrs_rs_sess_attr_show/_store).
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
	/* The Rust session, set once open has built it; NULL before. */
	void *sess;
	/* rtrs_rs_sess_dev_del() ran: the tree is out of sysfs. */
	bool deleted;
};

struct rtrs_rs_path_kobj {
	struct kobject kobj;
	struct kobject *stats;
	const void *path;
};

struct rtrs_rs_sess_attr {
	struct device_attribute dattr;
	int id;
};

static ssize_t rtrs_rs_sess_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct rtrs_rs_sess_dev *sd =
		container_of(dev, struct rtrs_rs_sess_dev, dev);
	void *sess = smp_load_acquire(&sd->sess);

	if (!sess)
		return -ENODEV;
	return rtrs_rs_sess_attr_show(sess,
		container_of(attr, struct rtrs_rs_sess_attr, dattr)->id, buf);
}

static ssize_t rtrs_rs_sess_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct rtrs_rs_sess_dev *sd =
		container_of(dev, struct rtrs_rs_sess_dev, dev);
	void *sess = smp_load_acquire(&sd->sess);

	if (!sess)
		return -ENODEV;
	return rtrs_rs_sess_attr_store(sess,
		container_of(attr, struct rtrs_rs_sess_attr, dattr)->id,
		buf, count);
}

/* The tables below are made from the lists of rtrs_sysfs_files.h. */
#define RS_SESS_ATTR(_name, _ID)					\
static struct rtrs_rs_sess_attr rtrs_rs_sa_##_name = {			\
	.dattr = __ATTR(_name, 0644, rtrs_rs_sess_show,		\
			rtrs_rs_sess_store),				\
	.id = RTRS_RS_SA_##_ID,						\
};
#define RS_SESS_ATTR_PTR(_name, _ID) &rtrs_rs_sa_##_name.dattr.attr,

RTRS_RS_SESS_FILES(RS_SESS_ATTR)

static struct attribute *rtrs_rs_sess_attrs[] = {
	RTRS_RS_SESS_FILES(RS_SESS_ATTR_PTR)
	NULL,
};
ATTRIBUTE_GROUPS(rtrs_rs_sess);

void rtrs_rs_sess_dev_set_sess(struct rtrs_rs_sess_dev *sd, void *sess)
{
	smp_store_release(&sd->sess, sess);
}

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
	sd->dev.groups = rtrs_rs_sess_groups;
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

/*
 * Takes the whole tree out of sysfs. device_del() drains it: it returns once
 * every show and store running on it (add_path, a path's reconnect, ...) has
 * returned, and none can start after. The memory stays until destroy.
 */
void rtrs_rs_sess_dev_del(struct rtrs_rs_sess_dev *sd)
{
	if (sd->deleted)
		return;
	sd->deleted = true;
	kobject_del(sd->paths);
	device_del(&sd->dev);
}

void rtrs_rs_sess_dev_destroy(struct rtrs_rs_sess_dev *sd)
{
	rtrs_rs_sess_dev_del(sd);
	kobject_put(sd->paths);
	put_device(&sd->dev);
}

/*
 * Every attribute dispatches to Rust with its id (enum rtrs_rs_path_attr_id
 * or rtrs_rs_sess_attr_id); names and modes are those of rtrs-clt-sysfs.c.
 */
struct rtrs_rs_path_attr {
	struct kobj_attribute kattr;
	int id;
};

static ssize_t rtrs_rs_path_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_attr_show(pk->path,
		container_of(attr, struct rtrs_rs_path_attr, kattr)->id, buf);
}

static ssize_t rtrs_rs_path_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_attr_store(pk->path,
		container_of(attr, struct rtrs_rs_path_attr, kattr)->id,
		buf, count, &attr->attr);
}

/* paths/<name>/stats/<file>: the stats kobject's parent is the path's. */
static ssize_t rtrs_rs_stats_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return rtrs_rs_path_show(kobj->parent, attr, buf);
}

static ssize_t rtrs_rs_stats_store(struct kobject *kobj,
				   struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	struct rtrs_rs_path_kobj *pk =
		container_of(kobj->parent, struct rtrs_rs_path_kobj, kobj);

	return rtrs_rs_path_attr_store(pk->path,
		container_of(attr, struct rtrs_rs_path_attr, kattr)->id,
		buf, count, &attr->attr);
}

#define RS_PATH_ATTR_RO(_name, _ID)					\
static struct rtrs_rs_path_attr rtrs_rs_pa_##_name = {			\
	.kattr = __ATTR(_name, 0444, rtrs_rs_path_show, NULL),		\
	.id = RTRS_RS_PA_##_ID,						\
};
#define RS_PATH_ATTR_RW(_name, _ID)					\
static struct rtrs_rs_path_attr rtrs_rs_pa_##_name = {			\
	.kattr = __ATTR(_name, 0644, rtrs_rs_path_show,		\
			rtrs_rs_path_store),				\
	.id = RTRS_RS_PA_##_ID,						\
};
#define RS_STATS_ATTR(_name, _ID)					\
static struct rtrs_rs_path_attr rtrs_rs_pa_##_name = {			\
	.kattr = __ATTR(_name, 0644, rtrs_rs_stats_show,		\
			rtrs_rs_stats_store),				\
	.id = RTRS_RS_PA_##_ID,						\
};
#define RS_PATH_ATTR_PTR(_name, _ID) &rtrs_rs_pa_##_name.kattr.attr,

RTRS_RS_PATH_FILES(RS_PATH_ATTR_RO, RS_PATH_ATTR_RW)
RTRS_RS_STATS_FILES(RS_STATS_ATTR)

static struct attribute *rtrs_rs_path_attrs[] = {
	RTRS_RS_PATH_FILES(RS_PATH_ATTR_PTR, RS_PATH_ATTR_PTR)
	NULL,
};
ATTRIBUTE_GROUPS(rtrs_rs_path);

static struct attribute *rtrs_rs_stats_attrs[] = {
	RTRS_RS_STATS_FILES(RS_PATH_ATTR_PTR)
	NULL,
};

static const struct attribute_group rtrs_rs_stats_group = {
	.attrs = rtrs_rs_stats_attrs,
};

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
	err = sysfs_create_group(pk->stats, &rtrs_rs_stats_group);
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
	sysfs_remove_group(pk->stats, &rtrs_rs_stats_group);
	kobject_del(pk->stats);
	kobject_put(pk->stats);
	kobject_del(&pk->kobj);
	kobject_put(&pk->kobj);
}

void rtrs_rs_path_kobj_destroy_self(struct rtrs_rs_path_kobj *pk,
				    const void *attr)
{
	sysfs_remove_file_self(&pk->kobj, attr);
	rtrs_rs_path_kobj_destroy(pk);
}
