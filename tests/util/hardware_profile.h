#pragma once
// A small hardware profile (what `sparrow profile-hw` writes) with figures of a plausible
// 2-core device, for the tests that run the Z3 planner: written to a TempPath, whose path is
// returned.
#include <fstream>
#include <string>

#include "tests/util/test_paths.h"

namespace sparrow::testing {

inline std::string WriteHardwareProfile() {
  const std::string path = TempPath("hw.yaml");
  std::ofstream(path) << "version: 1\nmax_threads: 2\nmemory_gb_per_s: [20, 30]\n"
                         "kernels:\n"
                         "  q4_0:\n    dense_gb_per_s: [10, 18]\n    gather_gb_per_s: [5, 9]\n"
                         "  q8_0:\n    dense_gb_per_s: [12, 20]\n    gather_gb_per_s: [6, 10]\n"
                         "flash:\n  rates:\n    - {block_kib: 4, depth: 1, mib_per_s: 50}\n"
                         "    - {block_kib: 64, depth: 1, mib_per_s: 600}\n";
  return path;
}

}  // namespace sparrow::testing
