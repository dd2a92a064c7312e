/* The library needs_library.c links; never installed where it is looked for. */
__attribute__((visibility("default"))) int hvd_info_dependency(void) {
  return 0;
}
