// The memory limit sparrowd plans under, from cgroup files laid out as the kernel lays them out:
// under systemd that is the service's cgroup, where MemoryHigh= writes memory.high.
#include "engine/memory/device_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sparrow {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class CgroupMemoryLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/cgroup-limit-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ + "/v2/system.slice/sparrowd.service");
    std::filesystem::create_directories(root_ + "/v1/app");
  }
  void Put(const std::string& rel, const std::string& text) {
    std::ofstream(root_ + "/" + rel) << text;
  }
  uint64_t Limit() {
    return CgroupMemoryLimit(root_ + "/self-cgroup", root_ + "/v1", root_ + "/v2");
  }
  std::string root_;
};

TEST_F(CgroupMemoryLimitTest, MemoryHighOfTheServiceIsTheLimit) {
  Put("self-cgroup", "0::/system.slice/sparrowd.service\n");
  Put("v2/system.slice/sparrowd.service/memory.max", "max\n");
  Put("v2/system.slice/sparrowd.service/memory.high", std::to_string(300 * kMiB) + "\n");
  EXPECT_EQ(Limit(), 300 * kMiB);
}

TEST_F(CgroupMemoryLimitTest, TheLowerOfMemoryHighAndMemoryMax) {
  Put("self-cgroup", "0::/system.slice/sparrowd.service\n");
  Put("v2/system.slice/sparrowd.service/memory.max", std::to_string(200 * kMiB) + "\n");
  Put("v2/system.slice/sparrowd.service/memory.high", std::to_string(300 * kMiB) + "\n");
  EXPECT_EQ(Limit(), 200 * kMiB);
  Put("v2/system.slice/sparrowd.service/memory.max", "max\n");
  Put("v2/system.slice/sparrowd.service/memory.high", "max\n");
  EXPECT_EQ(Limit(), 0u);  // no limit at all
}

TEST_F(CgroupMemoryLimitTest, VersionOneLimitCountsToo) {
  Put("self-cgroup", "4:memory:/app\n0::/system.slice/sparrowd.service\n");
  Put("v1/app/memory.limit_in_bytes", std::to_string(150 * kMiB) + "\n");
  Put("v2/system.slice/sparrowd.service/memory.high", std::to_string(300 * kMiB) + "\n");
  EXPECT_EQ(Limit(), 150 * kMiB);
}

}  // namespace
}  // namespace sparrow
