#include "probe.h"

int main(int argc, char** argv) {
  return hvd_plugin_probe(argc > 1 ? argv[1] : "good");
}
