// Runs a fuzz target over files without libFuzzer: each argument is an
// input file or a folder of them (a corpus). The regular build registers
// every target this way over its committed corpus, so every crash ever found
// stays a test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path path(argv[i]);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (!entry.is_regular_file()) continue;
        run_file(entry.path());
        ++count;
      }
    } else {
      run_file(path);
      ++count;
    }
  }
  if (count == 0) {
    std::fprintf(stderr, "no inputs in the given paths\n");
    return 1;
  }
  std::printf("%zu inputs ran\n", count);
  return 0;
}
