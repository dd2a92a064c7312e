// Prints the default plugin search path of the binary holding this code, then
// loads transport `name` along it. 0 when it loads.
#pragma once

#ifdef HVD_PROBE_EXPORT
#define HVD_PROBE_API __attribute__((visibility("default")))
#else
#define HVD_PROBE_API
#endif

extern "C" HVD_PROBE_API int hvd_plugin_probe(const char* name);
