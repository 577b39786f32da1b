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

/* ib_alloc_pd() and ib_alloc_cq() are macros; ib_dealloc_pd() is inline. */
struct ib_pd *rtrs_rs_ib_alloc_pd(struct ib_device *dev, unsigned int flags);
void rtrs_rs_ib_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rtrs_rs_ib_alloc_cq(struct ib_device *dev, void *private,
				  int nr_cqe, int comp_vector,
				  enum ib_poll_context poll_ctx);

/* Posting work requests (static inlines). */
int rtrs_rs_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad_wr);
int rtrs_rs_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);

/* DMA mapping of IU buffers (static inlines). */
u64 rtrs_rs_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
			      size_t size, enum dma_data_direction dir);
void rtrs_rs_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
				 enum dma_data_direction dir);
int rtrs_rs_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr);
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

/*
 * TEST ONLY (bindings/rtrs_debug.c): the debug_connect module parameter,
 * "" when unset. Goes away with rtrs_debug.c once rtrs_clt_open is exported.
 */
const char *rtrs_rs_debug_connect(void);

#endif /* RTRS_RS_HELPERS_H */
