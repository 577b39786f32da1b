/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of rtrs-client-rs: static inlines and macros that Rust cannot
 * call directly. Every helper is a one-line forward to the kernel API.
 */
#ifndef RTRS_RS_HELPERS_H
#define RTRS_RS_HELPERS_H

#include <linux/types.h>
#include <linux/dma-direction.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rtrs_sysfs_files.h"
#include "rtrs_trace.h"

struct completion;
struct sockaddr_storage;

/* ib_device's name (dev_name() is a static inline). */
const char *rtrs_rs_ib_dev_name(const struct ib_device *ibdev);

/* rdma_create_id() is a macro; the id lives in init_net, as in the C client. */
struct rdma_cm_id *rtrs_rs_rdma_create_id(rdma_cm_event_handler handler,
					  void *context,
					  enum rdma_ucm_port_space ps,
					  enum ib_qp_type qp_type);

/* inet_pton_with_scope() in init_net, AF_UNSPEC (IPv4 or IPv6). */
int rtrs_rs_inet_pton(const char *src, const char *port,
		      struct sockaddr_storage *addr);

/*
 * ib_alloc_pd() and ib_alloc_cq() are macros; ib_dealloc_pd() is inline.
 * rtrs_rs_ib_alloc_pd() also reports the new PD's local_dma_lkey, which
 * ib_alloc_pd() sets once (it never changes while the PD lives).
 */
struct ib_pd *rtrs_rs_ib_alloc_pd(struct ib_device *dev, unsigned int flags,
				  u32 *local_dma_lkey);
void rtrs_rs_ib_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rtrs_rs_ib_alloc_cq(struct ib_device *dev, void *private,
				  int nr_cqe, int comp_vector,
				  enum ib_poll_context poll_ctx);

/*
 * rdma_create_qp() and the QP it stores in id->qp, as ib_create_qp()
 * returns one; an ERR_PTR on failure.
 */
struct ib_qp *rtrs_rs_rdma_create_qp(struct rdma_cm_id *id, struct ib_pd *pd,
				     struct ib_qp_init_attr *attr);

/* Posting work requests (static inlines). */
int rtrs_rs_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad_wr);
int rtrs_rs_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);

/*
 * DMA mapping of IU buffers (static inlines): ib_dma_map_single() checked
 * with ib_dma_mapping_error(), as every caller must: 0 and *dma_addr, or
 * -ENOMEM.
 */
int rtrs_rs_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
			      size_t size, enum dma_data_direction dir,
			      u64 *dma_addr);
void rtrs_rs_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
				 enum dma_data_direction dir);
void rtrs_rs_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
					size_t size,
					enum dma_data_direction dir);
void rtrs_rs_ib_dma_sync_single_for_device(struct ib_device *dev, u64 addr,
					   size_t size,
					   enum dma_data_direction dir);

/* struct completion (init_completion() and reinit_completion() are inline). */
void rtrs_rs_init_completion(struct completion *x);
void rtrs_rs_reinit_completion(struct completion *x);

/* Number of online CPUs (num_online_cpus() is inline). */
unsigned int rtrs_rs_num_online_cpus(void);
/* nr_cpu_ids (a macro on some configurations). */
unsigned int rtrs_rs_nr_cpu_ids(void);

/* Permit wait queue (wait_queue_head_t is embedded in C; here it is boxed). */
struct wait_queue_head;
struct wait_queue_head *rtrs_rs_waitq_alloc(void);
void rtrs_rs_waitq_free(struct wait_queue_head *wq);
/* Sleeps (TASK_UNINTERRUPTIBLE, io_schedule) until cond(ctx) is true. */
void rtrs_rs_waitq_wait(struct wait_queue_head *wq, bool (*cond)(void *ctx),
			void *ctx);
/* wake_up() if someone sleeps; call it right after the atomic read-modify-write
 * that made the condition true (smp_mb__after_atomic orders the two). */
void rtrs_rs_waitq_wake(struct wait_queue_head *wq);

/* Per-CPU areas and possible CPUs (macros). */
void *rtrs_rs_alloc_percpu(size_t size, size_t align);
void rtrs_rs_free_percpu(void *p);
/* per_cpu_ptr(p, cpu), or NULL if cpu is not a possible CPU. */
void *rtrs_rs_per_cpu_ptr(void *p, unsigned int cpu);
/* raw_cpu_ptr(p): the slot of the CPU this runs on. */
void *rtrs_rs_raw_cpu_ptr(void *p);

/*
 * dev_get_by_name(&init_net, name) -> ifindex, 0 if there is none. Reads
 * exactly IFNAMSIZ (16) bytes of name, NUL-terminated or not.
 */
int rtrs_rs_dev_ifindex(const char name[16]);

/* raw_smp_processor_id() (a macro). */
unsigned int rtrs_rs_raw_smp_processor_id(void);
#if defined(CONFIG_X86_64) && defined(CONFIG_SMP)
/*
 * The per-CPU addresses (%gs-relative) of the running CPU's id and of its
 * per-CPU offset, so that Rust reads them inline as this_cpu_read does.
 */
extern const unsigned long rtrs_rs_pcpu_cpu_number;
extern const unsigned long rtrs_rs_pcpu_this_cpu_off;
#endif

/* Scatterlist DMA mapping (static inlines). */
struct scatterlist;
/* ib_uses_virt_dma(): no DMA mapping (rxe, siw): sync and unmap do nothing. */
bool rtrs_rs_ib_uses_virt_dma(struct ib_device *dev);
int rtrs_rs_ib_dma_map_sg(struct ib_device *dev, struct scatterlist *sg,
			  int nents, enum dma_data_direction dir);
void rtrs_rs_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg,
			     int nents, enum dma_data_direction dir);
int rtrs_rs_ib_dereg_mr(struct ib_mr *mr);

/* The inlines and macros behind an embedded delayed work (rtrs_clt/wq.rs). */
struct delayed_work;
struct workqueue_struct;
struct work_struct;
/* The module parameters hb_interval_ms and hb_missed_max. */
unsigned int rtrs_rs_param_hb_interval_ms(void);
unsigned int rtrs_rs_param_hb_missed_max(void);

#define RTRS_RS_DWORK_CLASSES 8
/* INIT_DELAYED_WORK with the lockdep class `class` (< RTRS_RS_DWORK_CLASSES). */
void rtrs_rs_init_delayed_work(struct delayed_work *dw,
			       void (*fn)(struct work_struct *work),
			       unsigned int class, const char *name);
bool rtrs_rs_queue_delayed_work(struct workqueue_struct *wq,
				struct delayed_work *dw, unsigned int delay_ms);

/* RCU (inlines), msleep, and get_random_u32_below (inline). */
void rtrs_rs_rcu_read_lock(void);
void rtrs_rs_rcu_read_unlock(void);
void rtrs_rs_synchronize_rcu(void);
void rtrs_rs_msleep(unsigned int ms);
u32 rtrs_rs_get_random_u32_below(u32 ceil);

/*
 * bindings/rtrs_export.c: calls into rnbd's callbacks (so the indirect call
 * is made from C with the C prototype).
 */
void rtrs_rs_call_conf(void (*conf)(void *priv, int errno), void *priv,
		       int errno);
struct rtrs_clt_ops;
void rtrs_rs_call_link_ev(const struct rtrs_clt_ops *ops, int ev);

/*
 * Session device and path directories of /sys/class/rtrs-client
 * (bindings/rtrs_sysfs.c). Attribute shows call back into Rust.
 */
struct rtrs_rs_sess_dev;
struct rtrs_rs_path_kobj;
struct rtrs_rs_sess_dev *rtrs_rs_sess_dev_create(struct class *cls,
						 const char *name);
void rtrs_rs_sess_dev_del(struct rtrs_rs_sess_dev *sd);
void rtrs_rs_sess_dev_destroy(struct rtrs_rs_sess_dev *sd);
struct rtrs_rs_path_kobj *rtrs_rs_path_kobj_create(struct rtrs_rs_sess_dev *sd,
						   const char *name,
						   const void *path);
void rtrs_rs_path_kobj_destroy(struct rtrs_rs_path_kobj *pk);
/* From a store on the directory's own file attr (a struct attribute). */
void rtrs_rs_path_kobj_destroy_self(struct rtrs_rs_path_kobj *pk,
				    const void *attr);
/* The session's own files (rtrs_sysfs_files.h); _COUNT is how many. */
#define RTRS_RS_SA_ID(name, ID) RTRS_RS_SA_##ID,
enum rtrs_rs_sess_attr_id {
	RTRS_RS_SESS_FILES(RTRS_RS_SA_ID)
	RTRS_RS_SA_COUNT
};
/* Publishes the Rust session to the session files (NULL: -ENODEV). */
void rtrs_rs_sess_dev_set_sess(struct rtrs_rs_sess_dev *sd, void *sess);
/* Implemented in Rust: show and store of a session file. */
ssize_t rtrs_rs_sess_attr_show(void *sess, int id, char *buf);
ssize_t rtrs_rs_sess_attr_store(void *sess, int id, const char *buf,
				size_t count);

/* The files of a path directory and its stats/ (rtrs_sysfs_files.h). */
#define RTRS_RS_PA_ID(name, ID) RTRS_RS_PA_##ID,
enum rtrs_rs_path_attr_id {
	RTRS_RS_PATH_FILES(RTRS_RS_PA_ID, RTRS_RS_PA_ID)
	RTRS_RS_STATS_FILES(RTRS_RS_PA_ID)
	RTRS_RS_PA_COUNT
};
/* Implemented in Rust: show and store of a path file. */
ssize_t rtrs_rs_path_attr_show(const void *path, int id, char *buf);
ssize_t rtrs_rs_path_attr_store(const void *path, int id, const char *buf,
				size_t count, const void *attr);

#endif /* RTRS_RS_HELPERS_H */
