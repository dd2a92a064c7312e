/*
 * Everything ABI 1.0 defines that a later 1.x version must keep: each struct,
 * each of its fields (offset and size must stay), each constant (value must
 * stay), and the counts that may only grow. Written once for 1.0 and never
 * edited: later minors append to the headers, not to this list.
 *
 * X-macros: HVD_V1_0_STRUCTS(S) calls S(type) for every struct,
 * HVD_V1_0_FIELDS(F) calls F(type, field), HVD_V1_0_CONSTANTS(C) calls
 * C(name), HVD_V1_0_GROWING(G) calls G(name).
 */
#ifndef HOROVOD_TESTS_ABI_V1_0_ABI_H
#define HOROVOD_TESTS_ABI_V1_0_ABI_H

#define HVD_V1_0_STRUCTS(S) \
  S(hvd_extension) \
  S(hvd_plugin_header) \
  S(hvd_device) \
  S(hvd_completion) \
  S(hvd_team) \
  S(hvd_config_value) \
  S(hvd_config_table) \
  S(hvd_world) \
  S(hvd_device_api) \
  S(hvd_host) \
  S(hvd_transport_properties) \
  S(hvd_conn_info) \
  S(hvd_transport_api) \
  S(hvd_transport_collectives) \
  S(hvd_p2p_api) \
  S(hvd_coll_args) \
  S(hvd_score_range) \
  S(hvd_reducer_api) \
  S(hvd_adapter_api) \
  S(hvd_dl_dtype) \
  S(hvd_tensor) \
  S(hvd_init_options) \
  S(hvd_op)

#define HVD_V1_0_FIELDS(F) \
  F(hvd_extension, struct_size) \
  F(hvd_extension, type) \
  F(hvd_extension, next) \
  F(hvd_plugin_header, struct_size) \
  F(hvd_plugin_header, ext) \
  F(hvd_plugin_header, kind) \
  F(hvd_plugin_header, abi_major) \
  F(hvd_plugin_header, abi_minor) \
  F(hvd_plugin_header, name) \
  F(hvd_plugin_header, version) \
  F(hvd_device, kind) \
  F(hvd_device, id) \
  F(hvd_completion, struct_size) \
  F(hvd_completion, status) \
  F(hvd_completion, peer) \
  F(hvd_completion, bytes) \
  F(hvd_team, struct_size) \
  F(hvd_team, ext) \
  F(hvd_team, rank) \
  F(hvd_team, size) \
  F(hvd_team, world_ranks) \
  F(hvd_team, host_of) \
  F(hvd_team, host_count) \
  F(hvd_team, local_rank) \
  F(hvd_team, local_size) \
  F(hvd_team, epoch) \
  F(hvd_team, process_set) \
  F(hvd_config_value, struct_size) \
  F(hvd_config_value, key) \
  F(hvd_config_value, type) \
  F(hvd_config_value, bool_value) \
  F(hvd_config_value, int_value) \
  F(hvd_config_value, float_value) \
  F(hvd_config_value, string_value) \
  F(hvd_config_value, items) \
  F(hvd_config_value, item_count) \
  F(hvd_config_value, source) \
  F(hvd_config_table, struct_size) \
  F(hvd_config_table, name) \
  F(hvd_config_table, values) \
  F(hvd_config_table, count) \
  F(hvd_world, struct_size) \
  F(hvd_world, rank) \
  F(hvd_world, size) \
  F(hvd_world, local_rank) \
  F(hvd_world, local_size) \
  F(hvd_world, cross_rank) \
  F(hvd_world, cross_size) \
  F(hvd_world, epoch) \
  F(hvd_world, hostname) \
  F(hvd_device_api, struct_size) \
  F(hvd_device_api, ext) \
  F(hvd_device_api, ctx) \
  F(hvd_device_api, device_count) \
  F(hvd_device_api, stream_create) \
  F(hvd_device_api, stream_destroy) \
  F(hvd_device_api, stream_synchronize) \
  F(hvd_device_api, stream_wait_event) \
  F(hvd_device_api, event_create) \
  F(hvd_device_api, event_destroy) \
  F(hvd_device_api, event_record) \
  F(hvd_device_api, event_query) \
  F(hvd_device_api, mem_alloc) \
  F(hvd_device_api, mem_free) \
  F(hvd_device_api, memcpy_async) \
  F(hvd_device_api, reduce) \
  F(hvd_device_api, scale) \
  F(hvd_host, struct_size) \
  F(hvd_host, ext) \
  F(hvd_host, ctx) \
  F(hvd_host, abi_major) \
  F(hvd_host, abi_minor) \
  F(hvd_host, log_enabled) \
  F(hvd_host, log) \
  F(hvd_host, config) \
  F(hvd_host, config_error) \
  F(hvd_host, world) \
  F(hvd_host, bootstrap_put) \
  F(hvd_host, bootstrap_get) \
  F(hvd_host, bootstrap_allgather) \
  F(hvd_host, bootstrap_barrier) \
  F(hvd_host, mem_alloc) \
  F(hvd_host, mem_free) \
  F(hvd_host, device) \
  F(hvd_host, timeline_begin) \
  F(hvd_host, timeline_end) \
  F(hvd_transport_properties, struct_size) \
  F(hvd_transport_properties, ext) \
  F(hvd_transport_properties, mem_kinds) \
  F(hvd_transport_properties, flags) \
  F(hvd_transport_properties, tag_bits) \
  F(hvd_transport_properties, max_requests) \
  F(hvd_transport_properties, max_message_bytes) \
  F(hvd_transport_properties, bandwidth_gbps) \
  F(hvd_transport_properties, latency_us) \
  F(hvd_transport_properties, handle_bytes) \
  F(hvd_conn_info, struct_size) \
  F(hvd_conn_info, self_rank) \
  F(hvd_conn_info, peer_rank) \
  F(hvd_conn_info, epoch) \
  F(hvd_transport_api, struct_size) \
  F(hvd_transport_api, ext) \
  F(hvd_transport_api, kind) \
  F(hvd_transport_api, abi_major) \
  F(hvd_transport_api, abi_minor) \
  F(hvd_transport_api, name) \
  F(hvd_transport_api, version) \
  F(hvd_transport_api, init) \
  F(hvd_transport_api, finalize) \
  F(hvd_transport_api, get_properties) \
  F(hvd_transport_api, last_error) \
  F(hvd_transport_api, listen) \
  F(hvd_transport_api, accept) \
  F(hvd_transport_api, connect) \
  F(hvd_transport_api, conn_test) \
  F(hvd_transport_api, conn_peer) \
  F(hvd_transport_api, conn_close) \
  F(hvd_transport_api, listener_close) \
  F(hvd_transport_api, mr_reg) \
  F(hvd_transport_api, mr_dereg) \
  F(hvd_transport_api, isend) \
  F(hvd_transport_api, irecv) \
  F(hvd_transport_api, test) \
  F(hvd_transport_api, progress) \
  F(hvd_transport_api, wait_fd) \
  F(hvd_transport_api, wait_arm) \
  F(hvd_transport_api, abort) \
  F(hvd_transport_api, mem_alloc) \
  F(hvd_transport_api, mem_free) \
  F(hvd_transport_api, mr_export) \
  F(hvd_transport_api, mr_import) \
  F(hvd_transport_api, mr_release) \
  F(hvd_transport_api, remote_ptr) \
  F(hvd_transport_api, iput) \
  F(hvd_transport_api, iget) \
  F(hvd_transport_collectives, struct_size) \
  F(hvd_transport_collectives, type) \
  F(hvd_transport_collectives, next) \
  F(hvd_transport_collectives, comm_create) \
  F(hvd_transport_collectives, comm_destroy) \
  F(hvd_transport_collectives, supports) \
  F(hvd_transport_collectives, allreduce) \
  F(hvd_transport_collectives, allgatherv) \
  F(hvd_transport_collectives, broadcast) \
  F(hvd_transport_collectives, reducescatter) \
  F(hvd_transport_collectives, alltoallv) \
  F(hvd_transport_collectives, barrier) \
  F(hvd_transport_collectives, comm_abort) \
  F(hvd_p2p_api, struct_size) \
  F(hvd_p2p_api, ext) \
  F(hvd_p2p_api, team) \
  F(hvd_p2p_api, isend) \
  F(hvd_p2p_api, irecv) \
  F(hvd_p2p_api, test) \
  F(hvd_p2p_api, subteam) \
  F(hvd_p2p_api, native) \
  F(hvd_p2p_api, peer_buffer) \
  F(hvd_coll_args, struct_size) \
  F(hvd_coll_args, ext) \
  F(hvd_coll_args, collective) \
  F(hvd_coll_args, dtype) \
  F(hvd_coll_args, op) \
  F(hvd_coll_args, send) \
  F(hvd_coll_args, recv) \
  F(hvd_coll_args, count) \
  F(hvd_coll_args, counts) \
  F(hvd_coll_args, displs) \
  F(hvd_coll_args, send_counts) \
  F(hvd_coll_args, send_displs) \
  F(hvd_coll_args, root) \
  F(hvd_coll_args, prescale) \
  F(hvd_coll_args, postscale) \
  F(hvd_coll_args, device) \
  F(hvd_coll_args, stream) \
  F(hvd_score_range, struct_size) \
  F(hvd_score_range, min_bytes) \
  F(hvd_score_range, max_bytes) \
  F(hvd_score_range, score) \
  F(hvd_reducer_api, struct_size) \
  F(hvd_reducer_api, ext) \
  F(hvd_reducer_api, kind) \
  F(hvd_reducer_api, abi_major) \
  F(hvd_reducer_api, abi_minor) \
  F(hvd_reducer_api, name) \
  F(hvd_reducer_api, version) \
  F(hvd_reducer_api, init) \
  F(hvd_reducer_api, finalize) \
  F(hvd_reducer_api, last_error) \
  F(hvd_reducer_api, score) \
  F(hvd_reducer_api, post) \
  F(hvd_reducer_api, progress) \
  F(hvd_reducer_api, task_free) \
  F(hvd_reducer_api, abort_task) \
  F(hvd_adapter_api, struct_size) \
  F(hvd_adapter_api, ext) \
  F(hvd_adapter_api, kind) \
  F(hvd_adapter_api, abi_major) \
  F(hvd_adapter_api, abi_minor) \
  F(hvd_adapter_api, name) \
  F(hvd_adapter_api, version) \
  F(hvd_adapter_api, allocate_output) \
  F(hvd_adapter_api, ready) \
  F(hvd_adapter_api, done) \
  F(hvd_dl_dtype, code) \
  F(hvd_dl_dtype, bits) \
  F(hvd_dl_dtype, lanes) \
  F(hvd_tensor, struct_size) \
  F(hvd_tensor, ext) \
  F(hvd_tensor, data) \
  F(hvd_tensor, device) \
  F(hvd_tensor, ndim) \
  F(hvd_tensor, dtype) \
  F(hvd_tensor, shape) \
  F(hvd_tensor, strides) \
  F(hvd_tensor, byte_offset) \
  F(hvd_init_options, struct_size) \
  F(hvd_init_options, ext) \
  F(hvd_init_options, config_path) \
  F(hvd_init_options, process_sets) \
  F(hvd_init_options, process_set_sizes) \
  F(hvd_init_options, process_set_count) \
  F(hvd_op, struct_size) \
  F(hvd_op, ext) \
  F(hvd_op, collective) \
  F(hvd_op, name) \
  F(hvd_op, process_set) \
  F(hvd_op, tensor_count) \
  F(hvd_op, inputs) \
  F(hvd_op, outputs) \
  F(hvd_op, op) \
  F(hvd_op, prescale) \
  F(hvd_op, postscale) \
  F(hvd_op, root) \
  F(hvd_op, splits) \
  F(hvd_op, split_count) \
  F(hvd_op, stream) \
  F(hvd_op, ready_event) \
  F(hvd_op, done) \
  F(hvd_op, user) \
  F(hvd_op, adapter) \
  F(hvd_op, adapter_op)

#define HVD_V1_0_CONSTANTS(C) \
  C(HVD_OK) \
  C(HVD_AGAIN) \
  C(HVD_ERR_UNSUPPORTED) \
  C(HVD_ERR_INVALID_ARGUMENT) \
  C(HVD_ERR_OUT_OF_MEMORY) \
  C(HVD_ERR_PEER_FAILED) \
  C(HVD_ERR_TIMEOUT) \
  C(HVD_ERR_ABORTED) \
  C(HVD_ERR_EPOCH_MISMATCH) \
  C(HVD_ERR_MISMATCH) \
  C(HVD_ERR_VERSION) \
  C(HVD_ERR_CONFIG) \
  C(HVD_ERR_SYSTEM) \
  C(HVD_ERR_INTERNAL) \
  C(HVD_ERR_TRUNCATED) \
  C(HVD_ERR_NOT_FOUND) \
  C(HVD_ERR_SHUT_DOWN) \
  C(HVD_EXT_TRANSPORT_COLLECTIVES) \
  C(HVD_EXT_VENDOR_BASE) \
  C(HVD_PLUGIN_TRANSPORT) \
  C(HVD_PLUGIN_REDUCER) \
  C(HVD_PLUGIN_ADAPTER) \
  C(HVD_UINT8) \
  C(HVD_INT8) \
  C(HVD_UINT16) \
  C(HVD_INT16) \
  C(HVD_INT32) \
  C(HVD_INT64) \
  C(HVD_FLOAT16) \
  C(HVD_BFLOAT16) \
  C(HVD_FLOAT32) \
  C(HVD_FLOAT64) \
  C(HVD_BOOL) \
  C(HVD_OP_SUM) \
  C(HVD_OP_AVERAGE) \
  C(HVD_OP_MIN) \
  C(HVD_OP_MAX) \
  C(HVD_OP_PRODUCT) \
  C(HVD_OP_ADASUM) \
  C(HVD_COLL_ALLREDUCE) \
  C(HVD_COLL_ALLGATHER) \
  C(HVD_COLL_BROADCAST) \
  C(HVD_COLL_ALLTOALL) \
  C(HVD_COLL_REDUCESCATTER) \
  C(HVD_COLL_BARRIER) \
  C(HVD_COLL_JOIN) \
  C(HVD_MEM_HOST) \
  C(HVD_MEM_CUDA) \
  C(HVD_MEM_DMABUF) \
  C(HVD_LOG_TRACE) \
  C(HVD_LOG_DEBUG) \
  C(HVD_LOG_INFO) \
  C(HVD_LOG_WARNING) \
  C(HVD_LOG_ERROR) \
  C(HVD_LOG_FATAL) \
  C(HVD_ABI_VERSION_MAJOR) \
  C(HVD_VALUE_BOOL) \
  C(HVD_VALUE_INT) \
  C(HVD_VALUE_FLOAT) \
  C(HVD_VALUE_STRING) \
  C(HVD_VALUE_ARRAY) \
  C(HVD_TRANSPORT_THREAD_SAFE) \
  C(HVD_TRANSPORT_GLOBAL_MR) \
  C(HVD_TRANSPORT_NEEDS_MR) \
  C(HVD_TRANSPORT_ONE_SIDED) \
  C(HVD_TRANSPORT_NEEDS_PROGRESS) \
  C(HVD_TRANSPORT_INTRA_HOST) \
  C(HVD_TRANSPORT_NATIVE_COLLECTIVES) \
  C(HVD_TRANSPORT_HANDLE_MAX) \
  C(HVD_TRANSPORT_MR_KEY_MAX) \
  C(HVD_DL_INT) \
  C(HVD_DL_UINT) \
  C(HVD_DL_FLOAT) \
  C(HVD_DL_BFLOAT) \
  C(HVD_DL_BOOL)

#define HVD_V1_0_GROWING(G) \
  G(HVD_DTYPE_COUNT) \
  G(HVD_OP_COUNT) \
  G(HVD_COLL_COUNT) \
  G(HVD_MEM_KIND_COUNT) \
  G(HVD_ABI_VERSION_MINOR)

#endif /* HOROVOD_TESTS_ABI_V1_0_ABI_H */
