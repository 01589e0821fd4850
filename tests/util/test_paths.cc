#include "tests/util/test_paths.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sparrow::testing {

std::string SharedDir() {
  if (const char* env = std::getenv("SPARROW_SHARED_DIR"); env && *env) return env;
  return SPARROW_SHARED_DIR;
}

std::string ModelPath(const std::string& name) {
  return SharedDir() + "/models/" + name;
}
std::string TestdataPath(const std::string& rel) {
  return SharedDir() + "/testdata/" + rel;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sparrow::testing

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

namespace sparrow::testing {

std::string TempPath(const std::string& name) {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "sparrow-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + name;
}

}  // namespace sparrow::testing
