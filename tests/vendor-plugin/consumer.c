/* A program using the C API of an installed Horovod (Horovod::horovod). */
#include <stdio.h>

#include "horovod/horovod.h"

int main(void) {
  if (hvd_is_initialized() != 0 || hvd_rank() != -1) {
    fprintf(stderr, "a fresh process reports an initialised runtime\n");
    return 1;
  }
  printf("ABI %d.%d: %s\n", HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR,
         hvd_status_string(HVD_ERR_VERSION));
  return 0;
}
