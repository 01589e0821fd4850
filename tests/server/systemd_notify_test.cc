// sd_notify from sparrowd's side (SystemdNotifier) to a real datagram socket (NotifySocket), and
// the watchdog that pings only while its health check passes.
#include "server/core/systemd_notify.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>

#include "server/core/service_watchdog.h"
#include "tests/util/notify_socket.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kPatience{30000};  // guards a hang; never reached when all is well

SystemdNotifier::GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(SystemdNotifierTest, WithoutNotifySocketSendsNothingAndSucceeds) {
  auto n = SystemdNotifier::FromEnvironment(Env({{"WATCHDOG_USEC", "1000000"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_FALSE(n->enabled());
  EXPECT_EQ(n->watchdog_interval().count(), 0);
  EXPECT_TRUE(n->Send("READY=1").ok());
}

TEST(SystemdNotifierTest, AbstractNameReceivesEachStateAsOneDatagram) {
  testing::NotifySocket manager;
  ASSERT_TRUE(manager.ok());
  ASSERT_EQ(manager.name()[0], '@');
  auto n = SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", manager.name()}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE(n->Send("READY=1").ok());
  ASSERT_TRUE(n->Send("STATUS=serving\nSTOPPING=1").ok());
  EXPECT_EQ(manager.Receive(kPatience), "READY=1");
  EXPECT_EQ(manager.Receive(kPatience), "STATUS=serving\nSTOPPING=1");
}

TEST(SystemdNotifierTest, PathNameReceives) {
  testing::NotifySocket manager(testing::TempPath("notify.sock"));
  ASSERT_TRUE(manager.ok());
  auto n = SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", manager.name()}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE(n->Send("WATCHDOG=1").ok());
  EXPECT_EQ(manager.Receive(kPatience), "WATCHDOG=1");
}

TEST(SystemdNotifierTest, AnAbsentManagerIsAnErrorNamingTheSocket) {
  auto n = SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", "@sparrow-nobody-listens"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  const Status st = n->Send("READY=1");
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("@sparrow-nobody-listens"), std::string::npos) << st.message();
}

TEST(SystemdNotifierTest, MalformedVariablesAreRefusedByName) {
  auto relative = SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", "run/notify"}}));
  EXPECT_EQ(relative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(relative.status().message().find("NOTIFY_SOCKET 'run/notify'"), std::string::npos);

  auto long_name =
      SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", "/" + std::string(200, 'x')}}));
  EXPECT_EQ(long_name.status().code(), StatusCode::kInvalidArgument);

  for (const char* bad : {"abc", "0", "-5", "10s"}) {
    auto n =
        SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", "@x"}, {"WATCHDOG_USEC", bad}}));
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(n.status().message().find("WATCHDOG_USEC"), std::string::npos) << bad;
  }
}

TEST(SystemdNotifierTest, WatchdogIsOursOnlyWhenWatchdogPidIsUs) {
  const std::string me = std::to_string(::getpid());
  auto mine = SystemdNotifier::FromEnvironment(
      Env({{"NOTIFY_SOCKET", "@x"}, {"WATCHDOG_USEC", "3000000"}, {"WATCHDOG_PID", me}}));
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->watchdog_interval(), std::chrono::seconds(3));

  auto unnamed =
      SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", "@x"}, {"WATCHDOG_USEC", "500"}}));
  ASSERT_TRUE(unnamed.ok());
  EXPECT_EQ(unnamed->watchdog_interval(), std::chrono::microseconds(500));

  auto other = SystemdNotifier::FromEnvironment(
      Env({{"NOTIFY_SOCKET", "@x"}, {"WATCHDOG_USEC", "3000000"}, {"WATCHDOG_PID", me + "0"}}));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->watchdog_interval().count(), 0);
}

// The pings follow the health check: none while it fails, then one per passing check.
TEST(ServiceWatchdogTest, PingsOnlyAfterTheHealthCheckPasses) {
  testing::NotifySocket manager;
  ASSERT_TRUE(manager.ok());
  auto n = SystemdNotifier::FromEnvironment(
      Env({{"NOTIFY_SOCKET", manager.name()}, {"WATCHDOG_USEC", "20000"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  constexpr int kSick = 3;
  std::atomic<int> checks{0};
  {
    ServiceWatchdog watchdog(*n, [&](std::string* why) {
      if (++checks <= kSick) {
        *why = "sick on purpose";
        return false;
      }
      return true;
    });
    ASSERT_EQ(manager.Receive(kPatience), "WATCHDOG=1");
    // Only a passing check sends: the first ping comes from check kSick + 1 at the earliest.
    EXPECT_GT(checks.load(), kSick);
    EXPECT_EQ(manager.Receive(kPatience), "WATCHDOG=1");
  }
}

TEST(ServiceWatchdogTest, NoWatchdogNoChecks) {
  testing::NotifySocket manager;
  auto n = SystemdNotifier::FromEnvironment(Env({{"NOTIFY_SOCKET", manager.name()}}));
  ASSERT_TRUE(n.ok());
  std::atomic<int> checks{0};
  {
    ServiceWatchdog watchdog(*n, [&](std::string*) { return ++checks > 0; });
  }
  EXPECT_EQ(checks.load(), 0);
  EXPECT_EQ(manager.Receive(milliseconds(0)), std::nullopt);
}

}  // namespace
}  // namespace sparrow::server
