// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of rtrs-client-rs; see rtrs_helpers.h. Linked into the same .ko
 * as the Rust crate.
 */
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/netdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rtrs_helpers.h"

const char *rtrs_rs_ib_dev_name(const struct ib_device *ibdev)
{
	return dev_name(&ibdev->dev);
}

struct rdma_cm_id *rtrs_rs_rdma_create_id(rdma_cm_event_handler handler,
					  void *context,
					  enum rdma_ucm_port_space ps,
					  enum ib_qp_type qp_type)
{
	return rdma_create_id(&init_net, handler, context, ps, qp_type);
}

int rtrs_rs_inet_pton(const char *src, const char *port,
		      struct sockaddr_storage *addr)
{
	return inet_pton_with_scope(&init_net, AF_UNSPEC, src, port, addr);
}

struct ib_pd *rtrs_rs_ib_alloc_pd(struct ib_device *dev, unsigned int flags,
				  u32 *local_dma_lkey)
{
	struct ib_pd *pd = ib_alloc_pd(dev, flags);

	if (!IS_ERR(pd))
		*local_dma_lkey = pd->local_dma_lkey;
	return pd;
}

void rtrs_rs_ib_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

struct ib_cq *rtrs_rs_ib_alloc_cq(struct ib_device *dev, void *private,
				  int nr_cqe, int comp_vector,
				  enum ib_poll_context poll_ctx)
{
	return ib_alloc_cq(dev, private, nr_cqe, comp_vector, poll_ctx);
}

struct ib_qp *rtrs_rs_rdma_create_qp(struct rdma_cm_id *id, struct ib_pd *pd,
				     struct ib_qp_init_attr *attr)
{
	int err = rdma_create_qp(id, pd, attr);

	return err ? ERR_PTR(err) : id->qp;
}

int rtrs_rs_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

int rtrs_rs_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

int rtrs_rs_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
			      size_t size, enum dma_data_direction dir,
			      u64 *dma_addr)
{
	u64 addr = ib_dma_map_single(dev, cpu_addr, size, dir);

	if (ib_dma_mapping_error(dev, addr))
		return -ENOMEM;
	*dma_addr = addr;
	return 0;
}

void rtrs_rs_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
				 enum dma_data_direction dir)
{
	ib_dma_unmap_single(dev, addr, size, dir);
}

void rtrs_rs_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
					size_t size,
					enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

void rtrs_rs_ib_dma_sync_single_for_device(struct ib_device *dev, u64 addr,
					   size_t size,
					   enum dma_data_direction dir)
{
	ib_dma_sync_single_for_device(dev, addr, size, dir);
}

void rtrs_rs_init_completion(struct completion *x)
{
	init_completion(x);
}

void rtrs_rs_reinit_completion(struct completion *x)
{
	reinit_completion(x);
}

void *rtrs_rs_alloc_percpu(size_t size, size_t align)
{
	return (void __force *)__alloc_percpu(size, align);
}

void rtrs_rs_free_percpu(void *p)
{
	free_percpu((void __percpu __force *)p);
}

void *rtrs_rs_per_cpu_ptr(void *p, unsigned int cpu)
{
	if (cpu >= nr_cpu_ids || !cpu_possible(cpu))
		return NULL;
	return per_cpu_ptr((void __percpu __force *)p, cpu);
}

void *rtrs_rs_raw_cpu_ptr(void *p)
{
	return raw_cpu_ptr((void __percpu __force *)p);
}

unsigned int rtrs_rs_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

unsigned int rtrs_rs_num_online_cpus(void)
{
	return num_online_cpus();
}

struct wait_queue_head *rtrs_rs_waitq_alloc(void)
{
	struct wait_queue_head *wq = kmalloc(sizeof(*wq), GFP_KERNEL);

	if (wq)
		init_waitqueue_head(wq);
	return wq;
}

void rtrs_rs_waitq_free(struct wait_queue_head *wq)
{
	kfree(wq);
}

void rtrs_rs_waitq_wait(struct wait_queue_head *wq, bool (*cond)(void *ctx),
			void *ctx)
{
	DEFINE_WAIT(wait);

	if (cond(ctx))
		return;
	for (;;) {
		prepare_to_wait(wq, &wait, TASK_UNINTERRUPTIBLE);
		if (cond(ctx))
			break;
		io_schedule();
	}
	finish_wait(wq, &wait);
}

/* After an atomic read-modify-write that freed what the waiters wait for. */
void rtrs_rs_waitq_wake(struct wait_queue_head *wq)
{
	smp_mb__after_atomic();
	if (waitqueue_active(wq))
		wake_up(wq);
}

unsigned int rtrs_rs_raw_smp_processor_id(void)
{
	return raw_smp_processor_id();
}

#if defined(CONFIG_X86_64) && defined(CONFIG_SMP)
const unsigned long rtrs_rs_pcpu_cpu_number = (unsigned long)&pcpu_hot.cpu_number;
const unsigned long rtrs_rs_pcpu_this_cpu_off = (unsigned long)&this_cpu_off;
#endif

bool rtrs_rs_ib_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

int rtrs_rs_ib_dma_map_sg(struct ib_device *dev, struct scatterlist *sg,
			  int nents, enum dma_data_direction dir)
{
	return ib_dma_map_sg(dev, sg, nents, dir);
}

void rtrs_rs_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg,
			     int nents, enum dma_data_direction dir)
{
	ib_dma_unmap_sg(dev, sg, nents, dir);
}

int rtrs_rs_ib_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

/*
 * Heartbeat tunables (not in C, whose values are the defaults), read once at
 * load; rtrs_core's HbParams checks them (sysfs/ABI.md, "Extensions").
 */
static unsigned int hb_interval_ms = 5000;
module_param(hb_interval_ms, uint, 0444);
MODULE_PARM_DESC(hb_interval_ms, "Heartbeat period in ms (100-60000, default 5000)");
static unsigned int hb_missed_max = 5;
module_param(hb_missed_max, uint, 0444);
MODULE_PARM_DESC(hb_missed_max, "Unanswered heartbeats before a path recovers (1-100, default 5)");

unsigned int rtrs_rs_param_hb_interval_ms(void)
{
	return hb_interval_ms;
}

unsigned int rtrs_rs_param_hb_missed_max(void)
{
	return hb_missed_max;
}

void rtrs_rs_init_delayed_work(struct delayed_work *dw,
			       void (*fn)(struct work_struct *work),
			       unsigned int class, const char *name)
{
	INIT_DELAYED_WORK(dw, fn);
#ifdef CONFIG_LOCKDEP
	{
		/* One lockdep class per kind of work, as C's INIT_*_WORK sites give. */
		static struct lock_class_key keys[RTRS_RS_DWORK_CLASSES];

		if (class < ARRAY_SIZE(keys))
			lockdep_init_map(&dw->work.lockdep_map, name, &keys[class], 0);
	}
#endif
}

bool rtrs_rs_queue_delayed_work(struct workqueue_struct *wq,
				struct delayed_work *dw, unsigned int delay_ms)
{
	return queue_delayed_work(wq, dw, msecs_to_jiffies(delay_ms));
}

void rtrs_rs_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rtrs_rs_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

void rtrs_rs_synchronize_rcu(void)
{
	synchronize_rcu();
}

void rtrs_rs_msleep(unsigned int ms)
{
	msleep(ms);
}

u32 rtrs_rs_get_random_u32_below(u32 ceil)
{
	return get_random_u32_below(ceil);
}

static_assert(IFNAMSIZ == 16);

int rtrs_rs_dev_ifindex(const char name[16])
{
	struct net_device *ndev;
	char buf[IFNAMSIZ];
	int ifindex = 0;

	memcpy(buf, name, IFNAMSIZ);
	buf[IFNAMSIZ - 1] = '\0';
	ndev = dev_get_by_name(&init_net, buf);

	if (ndev) {
		ifindex = ndev->ifindex;
		dev_put(ndev);
	}
	return ifindex;
}
