/*
 * Built against the current headers: every struct, field and constant of ABI
 * 1.0 is where and what 1.0 put it (v1_0_layout.h is generated from the
 * frozen headers). The static assertions make this a build-time test; the
 * program adds the checks C cannot make at compile time.
 */
#include <stdio.h>
#include <string.h>

#include "horovod/abi.h"
#include "horovod/adapter.h"
#include "horovod/horovod.h"
#include "horovod/host.h"
#include "horovod/reducer.h"
#include "horovod/tensor.h"
#include "horovod/transport.h"
#include "v1_0_abi.h"
#include "v1_0_layout.h"

#define SIZEOF_FIELD(type, field) sizeof(((type*)0)->field)

#define S(type)                                           \
  _Static_assert(sizeof(type) >= V10_SIZEOF_##type, #type \
                 " shrank below "                         \
                 "1.0");
HVD_V1_0_STRUCTS(S)
#undef S

#define F(type, field)                                                     \
  _Static_assert(offsetof(type, field) == V10_OFFSET_##type##__##field,    \
                 #type "." #field " moved since 1.0");                     \
  _Static_assert(SIZEOF_FIELD(type, field) == V10_FSIZE_##type##__##field, \
                 #type "." #field " changed size since 1.0");
HVD_V1_0_FIELDS(F)
#undef F

#define C(name)                                    \
  _Static_assert((name) == V10_VALUE_##name, #name \
                 " changed value since "           \
                 "1.0");
HVD_V1_0_CONSTANTS(C)
#undef C

#define G(name) \
  _Static_assert((name) >= V10_VALUE_##name, #name " shrank since 1.0");
HVD_V1_0_GROWING(G)
#undef G

int main(void) {
  int failures = 0;
  int structs = 0, fields = 0, constants = 0;
  const char* entries[][2] = {
      {HVD_TRANSPORT_ENTRY, "hvd_transport_get_api"},
      {HVD_REDUCER_ENTRY, "hvd_reducer_get_api"},
      {HVD_ADAPTER_ENTRY, "hvd_adapter_get_api"},
  };
  size_t i;
  for (i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
    if (strcmp(entries[i][0], entries[i][1]) != 0) {
      printf("entry symbol %s is now %s\n", entries[i][1], entries[i][0]);
      ++failures;
    }
  }
#define COUNT_S(type) ++structs;
#define COUNT_F(type, field) ++fields;
#define COUNT_C(name) ++constants;
  HVD_V1_0_STRUCTS(COUNT_S)
  HVD_V1_0_FIELDS(COUNT_F)
  HVD_V1_0_CONSTANTS(COUNT_C)
  printf(
      "ABI 1.0 kept by %d.%d headers: %d structs, %d fields, %d constants,"
      " 3 entry symbols\n",
      HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR, structs, fields, constants);
  return failures == 0 ? 0 : 1;
}
