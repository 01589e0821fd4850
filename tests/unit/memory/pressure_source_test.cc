// The pressure sources on this machine's real interfaces where it has them (PSI triggers, a real
// cgroup v1 memory controller squeezed by a child process), and on written files for the
// parsing (/proc/self/cgroup, /proc/meminfo); Android's trim levels on our scale.
#include "engine/memory/pressure_source.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/memory/pressure_monitor.h"

namespace sparrow {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(PressureLevelTest, AndroidTrimLevelsMapOntoOurScale) {
  EXPECT_EQ(PressureFromTrimMemory("RUNNING_MODERATE"), PressureLevel::kLow);
  EXPECT_EQ(PressureFromTrimMemory("TRIM_MEMORY_RUNNING_LOW"), PressureLevel::kMedium);
  EXPECT_EQ(PressureFromTrimMemory("RUNNING_CRITICAL"), PressureLevel::kCritical);
  EXPECT_EQ(PressureFromTrimMemory("UI_HIDDEN"), PressureLevel::kLow);
  EXPECT_EQ(PressureFromTrimMemory("BACKGROUND"), PressureLevel::kLow);
  EXPECT_EQ(PressureFromTrimMemory("MODERATE"), PressureLevel::kMedium);
  EXPECT_EQ(PressureFromTrimMemory("COMPLETE"), PressureLevel::kCritical);
  EXPECT_EQ(PressureFromTrimMemory(15), PressureLevel::kCritical);
  EXPECT_EQ(PressureFromTrimMemory(80), PressureLevel::kCritical);
  EXPECT_FALSE(PressureFromTrimMemory("SOMETIMES"));
  EXPECT_FALSE(PressureFromTrimMemory(7));
  EXPECT_EQ(PressureLevelName(PressureLevel::kMedium), "medium");
}

TEST(PressureSourceTest, TheMemoryCgroupIsFoundInProcSelfCgroup) {
  const std::string mixed =
      WriteTemp("cgroup-mixed", "9:name=systemd:/\n4:cpu,memory:/apps/a1\n0::/\n");
  EXPECT_EQ(FindMemoryCgroupV1(mixed, "/m"), "/m/apps/a1");
  const std::string root = WriteTemp("cgroup-root", "4:memory:/\n");
  EXPECT_EQ(FindMemoryCgroupV1(root, "/m"), "/m");
  const std::string v2 = WriteTemp("cgroup-v2", "0::/user.slice\n");
  EXPECT_EQ(FindMemoryCgroupV1(v2, "/m"), "");
  EXPECT_EQ(FindMemoryCgroupV1("/nonexistent", "/m"), "");
}

TEST(PressureSourceTest, TheUnifiedCgroupIsFoundInProcSelfCgroup) {
  EXPECT_EQ(FindMemoryCgroupV2(WriteTemp("cgroup-v2-app", "0::/user.slice/app\n"), "/u"),
            "/u/user.slice/app");
  EXPECT_EQ(FindMemoryCgroupV2(WriteTemp("cgroup-v2-root", "0::/\n"), "/u"), "/u");
  EXPECT_EQ(FindMemoryCgroupV2(WriteTemp("cgroup-v1-only", "4:memory:/a\n"), "/u"), "");
}

// This machine's memory controller is on cgroup v1, so the v2 source reads a directory laid out
// as the kernel lays out a v2 cgroup's memory files: the rules (counts that rise, the lower of
// memory.high and memory.max, the headroom) are what is tested; the kernel's wake-up is not.
TEST(PressureSourceTest, CgroupV2EventsAndHeadroomGiveLevels) {
  const std::string dir = ::testing::TempDir() + "/cgroup-v2-fake";
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& file, const std::string& text) {
    std::ofstream(dir + "/" + file) << text;
  };
  auto events = [&](int high, int max, int oom) {
    put("memory.events", "low 0\nhigh " + std::to_string(high) + "\nmax " + std::to_string(max) +
                             "\noom " + std::to_string(oom) + "\noom_kill 0\n");
  };
  const uint64_t mib = 1 << 20;
  events(2, 1, 0);  // counts from before the server started say nothing
  put("memory.max", "max\n");
  put("memory.high", std::to_string(200 * mib) + "\n");
  put("memory.current", std::to_string(100 * mib) + "\n");
  put("memory.stat", "anon 1\nfile 2\ninactive_file " + std::to_string(10 * mib) + "\n");
  EXPECT_FALSE(OpenCgroupV2PressureSource(::testing::TempDir() + "/no-such-cgroup").ok());
  auto opened = OpenCgroupV2PressureSource(dir);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<PressureSource> source = std::move(opened).value();
  EXPECT_EQ(source->name(), "cgroup-v2");
  ASSERT_EQ(source->fds().size(), 1u);
  EXPECT_EQ(source->fds()[0].events, POLLPRI);
  EXPECT_EQ(source->limit_bytes(), 200 * mib);  // memory.high: the lower limit
  EXPECT_EQ(source->Read(-1).level, PressureLevel::kNone);
  // 90 MiB of working set under 200: 90 more before the 10% "low" line.
  EXPECT_EQ(source->room_bytes(), 90 * mib);

  events(3, 1, 0);  // throttled over memory.high
  EXPECT_EQ(source->Read(0).level, PressureLevel::kMedium);
  EXPECT_EQ(source->Read(-1).level, PressureLevel::kNone) << "a count is news once";
  events(3, 2, 0);  // reclaim at memory.max
  PressureReading r = source->Read(-1);
  EXPECT_EQ(r.level, PressureLevel::kCritical);
  EXPECT_NE(r.detail.find("memory.max"), std::string::npos) << r.detail;

  // Headroom: 195 MiB used, 10 of it inactive file pages: 15 of 200 MiB free (7.5%) is low.
  put("memory.current", std::to_string(195 * mib) + "\n");
  EXPECT_EQ(source->Read(-1).level, PressureLevel::kLow);
  EXPECT_EQ(source->room_bytes(), 0u);
  // The operator lowers memory.max under memory.high: 185 of 190 MiB in use, 2.6% free.
  put("memory.max", std::to_string(190 * mib) + "\n");
  r = source->Read(-1);
  EXPECT_EQ(r.level, PressureLevel::kCritical);
  EXPECT_EQ(source->limit_bytes(), 190 * mib);
  EXPECT_NE(r.detail.find("190 MiB limit"), std::string::npos) << r.detail;
}

// cgroup v1 on a directory of plain files: headroom as v2's, and memory.failcnt moving (a
// charge met the limit, someone is held in reclaim) is medium with no room to grow, however
// much the inactive file pages leave looking free.
TEST(PressureSourceTest, CgroupV1FailcntMovingIsPressureWhateverTheHeadroom) {
  const std::string dir = ::testing::TempDir() + "/cgroup-v1-fake";
  std::filesystem::create_directories(dir);
  auto put = [&](const std::string& file, const std::string& text) {
    std::ofstream(dir + "/" + file) << text;
  };
  const uint64_t mib = 1 << 20;
  put("memory.pressure_level", "");
  put("cgroup.event_control", "");
  put("memory.limit_in_bytes", std::to_string(200 * mib) + "\n");
  put("memory.usage_in_bytes", std::to_string(190 * mib) + "\n");
  put("memory.stat", "total_inactive_file " + std::to_string(90 * mib) + "\n");
  put("memory.failcnt", "5\n");  // from before the server started: says nothing
  auto opened = OpenCgroupV1PressureSource(dir);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<PressureSource> source = std::move(opened).value();
  EXPECT_EQ(source->Read(-1).level, PressureLevel::kNone);
  EXPECT_EQ(source->room_bytes(), 80 * mib) << "100 MiB working set under 200, 20 kept free";
  put("memory.failcnt", "7\n");
  const PressureReading r = source->Read(-1);
  EXPECT_EQ(r.level, PressureLevel::kMedium);
  EXPECT_NE(r.detail.find("memory.failcnt"), std::string::npos) << r.detail;
  EXPECT_EQ(source->room_bytes(), 0u);
  EXPECT_EQ(source->Read(-1).level, PressureLevel::kNone) << "a count is news once";
  EXPECT_EQ(source->room_bytes(), 80 * mib);
}

TEST(PressureSourceTest, MemAvailableGivesALevelByItsShare) {
  auto level_at = [](uint64_t available_kb) {
    const std::string path = WriteTemp("meminfo",
                                       "MemTotal:       1000000 kB\nMemFree: 1 kB\n"
                                       "MemAvailable:   " +
                                           std::to_string(available_kb) + " kB\n");
    auto s = OpenMemInfoPressureSource(path);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->fds().empty()) << "asked on the tick";
    return (*s)->Read(-1).level;
  };
  EXPECT_EQ(level_at(500000), PressureLevel::kNone);
  EXPECT_EQ(level_at(150000), PressureLevel::kNone) << "under 20% is common on a desktop";
  EXPECT_EQ(level_at(80000), PressureLevel::kMedium);
  EXPECT_EQ(level_at(40000), PressureLevel::kCritical);
  auto bad = OpenMemInfoPressureSource(WriteTemp("meminfo-bad", "MemTotal: 5 kB\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("MemAvailable"), std::string::npos);
  EXPECT_TRUE(OpenMemInfoPressureSource().ok()) << "this machine's /proc/meminfo";
}

TEST(PressureSourceTest, PsiTriggersArmWhereTheKernelHasThem) {
  auto s = OpenPsiPressureSource();
  if (!s.ok()) GTEST_SKIP() << "no PSI here: " << s.status().message();
  EXPECT_EQ((*s)->name(), "psi");
  ASSERT_EQ((*s)->fds().size(), 2u);
  for (const pollfd& p : (*s)->fds()) EXPECT_EQ(p.events, POLLPRI);
  auto missing = OpenPsiPressureSource("/proc/pressure/nonexistent");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/proc/pressure/nonexistent"), std::string::npos);
}

// A child cgroup with a 48 MiB limit, watched through the real cgroup v1 source and monitor; a
// child process in it touches 40 MiB of page cache and then anonymous memory until the kernel
// reclaims and kills it. The monitor must hear the cgroup's pressure.
TEST(PressureSourceTest, ACgroupUnderItsLimitReportsPressure) {
  const std::string ours = FindMemoryCgroupV1();
  if (ours.empty() || !std::filesystem::exists(ours + "/memory.pressure_level")) {
    GTEST_SKIP() << "no cgroup v1 memory controller here";
  }
  const std::string dir = ours + "/sparrow-pressure-test-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create a cgroup under " << ours << ": " << std::strerror(errno);
  }
  std::ofstream(dir + "/memory.limit_in_bytes") << (48 << 20);
  auto source = OpenCgroupV1PressureSource(dir);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->limit_bytes(), uint64_t{48} << 20);
  // The child runs before the monitor starts, so it forks a process with one thread; the
  // eventfds count what fires meanwhile and the monitor reads them when it starts.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ofstream(dir + "/cgroup.procs") << getpid();
    // Anonymous memory past the limit: reclaim finds little to free, then the OOM killer.
    const size_t step = size_t{1} << 20;
    for (int i = 0; i < 256; ++i) {
      void* p = mmap(nullptr, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) _exit(2);
      std::memset(p, 1, step);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the child outgrew its limit and was killed";
  std::mutex mu;
  std::vector<PressureLevel> heard;
  std::vector<std::unique_ptr<PressureSource>> sources;
  sources.push_back(std::move(source).value());
  {
    PressureMonitor monitor(
        std::move(sources), 100,
        [&](std::string_view name, const PressureReading& r) {
          EXPECT_EQ(name, "cgroup-v1");
          std::lock_guard<std::mutex> lock(mu);
          heard.push_back(r.level);
        },
        nullptr);
    // Bounded wait for the monitor's first poll to deliver (not a speed check).
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!heard.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  rmdir(dir.c_str());
  ASSERT_FALSE(heard.empty()) << "no pressure event from a cgroup squeezed past its limit";
  EXPECT_NE(std::find(heard.begin(), heard.end(), PressureLevel::kCritical), heard.end())
      << "anonymous memory at the limit is critical";
}

}  // namespace
}  // namespace sparrow
