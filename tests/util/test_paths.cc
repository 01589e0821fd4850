#include "tests/util/test_paths.h"

#include <sys/stat.h>

#include <cctype>
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
#include <filesystem>
#include <system_error>

namespace sparrow::testing {
namespace {

// Removes this process's temp files when it exits: converted models are tens of MB each, and a
// whole run used to leave about 5 GB in /tmp. Only the process that handed the paths out sweeps
// (a test's forked child, a death test or a hog, has another pid). Files derived from a path
// (name.tmp, ...) share its prefix and go too. SPARROW_KEEP_TEST_FILES=1 keeps them.
class TempSweeper {
 public:
  ~TempSweeper() {
    if (::getpid() != owner_) return;
    if (const char* keep = std::getenv("SPARROW_KEEP_TEST_FILES"); keep && *keep == '1') return;
    const std::string prefix = "sparrow-" + std::to_string(owner_) + "-";
    std::error_code ec;
    std::filesystem::directory_iterator it(::testing::TempDir(), ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (it->path().filename().string().rfind(prefix, 0) == 0) {
        std::error_code ignored;
        std::filesystem::remove_all(it->path(), ignored);
      }
    }
  }

 private:
  const pid_t owner_ = ::getpid();
};

}  // namespace

std::string TempPath(const std::string& name) {
  static TempSweeper sweeper;
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "sparrow-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + name;
}

}  // namespace sparrow::testing
