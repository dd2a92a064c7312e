/*
 * A transport that is the tcp plugin under another name: every call goes to
 * the tcp plugin at FORWARD_TO, loaded by the entry point. Built once per
 * way a transport may speak of threads, for the core binding and progress
 * jobs:
 *   FORWARD_OWN_THREADS   its properties set HVD_TRANSPORT_OWN_THREADS
 *   FORWARD_ABI_MINOR=n   its table says it was built for ABI 1.n (before
 *                         1.3: it may run threads; before 1.4: it is called
 *                         from the background thread only; 1.4: from a
 *                         waiting thread too) and ends where that table did
 *   FORWARD_THREADING=v   its table's `threading` is v (HVD_THREADING_*;
 *                         otherwise tcp's, which opts in)
 */
#include <dlfcn.h>
#include <stddef.h>

#include "horovod/transport.h"

#ifndef FORWARD_ABI_MINOR
#define FORWARD_ABI_MINOR HVD_ABI_VERSION_MINOR
#endif

typedef const hvd_transport_api* (*entry_fn)(uint32_t, uint32_t);

static hvd_transport_api table;
static hvd_status (*tcp_get_properties)(hvd_transport*,
                                        hvd_transport_properties*);

static hvd_status get_properties(hvd_transport* t,
                                 hvd_transport_properties* props) {
  hvd_status s = tcp_get_properties(t, props);
#ifdef FORWARD_OWN_THREADS
  if (s == HVD_OK) props->flags |= HVD_TRANSPORT_OWN_THREADS;
#endif
  return s;
}

HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t major,
                                                          uint32_t minor) {
  if (table.name != NULL) return &table;
  void* tcp = dlopen(FORWARD_TO, RTLD_NOW | RTLD_LOCAL);
  if (tcp == NULL) return NULL;
  entry_fn entry = (entry_fn)dlsym(tcp, HVD_TRANSPORT_ENTRY);
  const hvd_transport_api* api = entry ? entry(major, minor) : NULL;
  if (api == NULL) return NULL;
  table = *api;
  tcp_get_properties = api->get_properties;
  table.get_properties = get_properties;
  table.abi_minor = FORWARD_ABI_MINOR;
#if FORWARD_ABI_MINOR < 5
  table.struct_size = HVD_STRUCT_SIZE(hvd_transport_api, iget);
#endif
#ifdef FORWARD_THREADING
  table.threading = FORWARD_THREADING;
#endif
  table.name = FORWARD_NAME;
  return &table;
}
