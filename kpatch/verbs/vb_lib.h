/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's functions, loaded when the verbs backend is first used
 * (dlopen of libibverbs.so.1 and librdmacm.so.1), not linked: libesock.so,
 * preloaded into any program, then needs neither library nor libnl to load,
 * and runs where rdma-core is not installed (the verbs backend is then
 * absent: -ENODEV).  Included by the backend's files after the rdma-core
 * headers: the names below then call through the table.  The header's inline
 * functions (ibv_poll_cq, ibv_post_send, ibv_req_notify_cq, ...) go through
 * the device's own operations and need no symbol.
 */
#ifndef ESOCK_KPATCH_VERBS_VB_LIB_H
#define ESOCK_KPATCH_VERBS_VB_LIB_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* X(return type, name, parameters): every rdma-core symbol the backend calls. */
#define VB_LIB_CALLS(X)                                                                          \
	X(const char *, ibv_get_device_name, (struct ibv_device *))                              \
	X(struct ibv_pd *, ibv_alloc_pd, (struct ibv_context *))                                  \
	X(int, ibv_dealloc_pd, (struct ibv_pd *))                                                 \
	X(struct ibv_mr *, ibv_reg_mr, (struct ibv_pd *, void *, size_t, int))                    \
	X(int, ibv_dereg_mr, (struct ibv_mr *))                                                   \
	X(struct ibv_comp_channel *, ibv_create_comp_channel, (struct ibv_context *))             \
	X(int, ibv_destroy_comp_channel, (struct ibv_comp_channel *))                             \
	X(struct ibv_cq *, ibv_create_cq, (struct ibv_context *, int, void *,                      \
					   struct ibv_comp_channel *, int))                       \
	X(int, ibv_destroy_cq, (struct ibv_cq *))                                                 \
	X(int, ibv_get_cq_event, (struct ibv_comp_channel *, struct ibv_cq **, void **))          \
	X(void, ibv_ack_cq_events, (struct ibv_cq *, unsigned int))                               \
	X(struct ibv_context **, rdma_get_devices, (int *))                                       \
	X(void, rdma_free_devices, (struct ibv_context **))                                       \
	X(struct rdma_event_channel *, rdma_create_event_channel, (void))                         \
	X(void, rdma_destroy_event_channel, (struct rdma_event_channel *))                        \
	X(int, rdma_get_cm_event, (struct rdma_event_channel *, struct rdma_cm_event **))         \
	X(int, rdma_ack_cm_event, (struct rdma_cm_event *))                                       \
	X(const char *, rdma_event_str, (enum rdma_cm_event_type))                                \
	X(int, rdma_create_id, (struct rdma_event_channel *, struct rdma_cm_id **, void *,        \
				enum rdma_port_space))                                            \
	X(int, rdma_destroy_id, (struct rdma_cm_id *))                                            \
	X(int, rdma_migrate_id, (struct rdma_cm_id *, struct rdma_event_channel *))               \
	X(int, rdma_resolve_addr, (struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int)) \
	X(int, rdma_resolve_route, (struct rdma_cm_id *, int))                                    \
	X(int, rdma_create_qp, (struct rdma_cm_id *, struct ibv_pd *, struct ibv_qp_init_attr *)) \
	X(void, rdma_destroy_qp, (struct rdma_cm_id *))                                           \
	X(int, rdma_connect, (struct rdma_cm_id *, struct rdma_conn_param *))                     \
	X(int, rdma_disconnect, (struct rdma_cm_id *))                                            \
	X(int, rdma_bind_addr, (struct rdma_cm_id *, struct sockaddr *))                          \
	X(int, rdma_listen, (struct rdma_cm_id *, int))                                           \
	X(int, rdma_accept, (struct rdma_cm_id *, struct rdma_conn_param *))                      \
	X(int, rdma_reject, (struct rdma_cm_id *, const void *, uint8_t))

struct vb_lib {
#define VB_LIB_FIELD(ret, name, params) ret(*f_##name) params;
	VB_LIB_CALLS(VB_LIB_FIELD)
#undef VB_LIB_FIELD
};

extern struct vb_lib vb_lib;

/* Loads the table once: 0, or -ENODEV (rdma-core is not installed; the log says why). */
int vb_lib_load(void);

/* From here on the names call through the table (ibv_reg_mr's macro included). */
#ifndef VB_LIB_NO_REDIRECT
#undef ibv_reg_mr
#define ibv_get_device_name vb_lib.f_ibv_get_device_name
#define ibv_alloc_pd vb_lib.f_ibv_alloc_pd
#define ibv_dealloc_pd vb_lib.f_ibv_dealloc_pd
#define ibv_reg_mr vb_lib.f_ibv_reg_mr
#define ibv_dereg_mr vb_lib.f_ibv_dereg_mr
#define ibv_create_comp_channel vb_lib.f_ibv_create_comp_channel
#define ibv_destroy_comp_channel vb_lib.f_ibv_destroy_comp_channel
#define ibv_create_cq vb_lib.f_ibv_create_cq
#define ibv_destroy_cq vb_lib.f_ibv_destroy_cq
#define ibv_get_cq_event vb_lib.f_ibv_get_cq_event
#define ibv_ack_cq_events vb_lib.f_ibv_ack_cq_events
#define rdma_get_devices vb_lib.f_rdma_get_devices
#define rdma_free_devices vb_lib.f_rdma_free_devices
#define rdma_create_event_channel vb_lib.f_rdma_create_event_channel
#define rdma_destroy_event_channel vb_lib.f_rdma_destroy_event_channel
#define rdma_get_cm_event vb_lib.f_rdma_get_cm_event
#define rdma_ack_cm_event vb_lib.f_rdma_ack_cm_event
#define rdma_event_str vb_lib.f_rdma_event_str
#define rdma_create_id vb_lib.f_rdma_create_id
#define rdma_destroy_id vb_lib.f_rdma_destroy_id
#define rdma_migrate_id vb_lib.f_rdma_migrate_id
#define rdma_resolve_addr vb_lib.f_rdma_resolve_addr
#define rdma_resolve_route vb_lib.f_rdma_resolve_route
#define rdma_create_qp vb_lib.f_rdma_create_qp
#define rdma_destroy_qp vb_lib.f_rdma_destroy_qp
#define rdma_connect vb_lib.f_rdma_connect
#define rdma_disconnect vb_lib.f_rdma_disconnect
#define rdma_bind_addr vb_lib.f_rdma_bind_addr
#define rdma_listen vb_lib.f_rdma_listen
#define rdma_accept vb_lib.f_rdma_accept
#define rdma_reject vb_lib.f_rdma_reject
#endif

#endif /* ESOCK_KPATCH_VERBS_VB_LIB_H */
