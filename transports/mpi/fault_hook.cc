// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone (sever: transport.h).
#include "horovod_plugin/fault_hook.h"

#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY
