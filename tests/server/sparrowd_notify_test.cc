// sparrowd as systemd runs it (Type=notify, WatchdogSec=): the real process with NOTIFY_SOCKET and
// WATCHDOG_USEC set, this test in the service manager's place at the other end of the socket.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

#include "tests/util/notify_socket.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kPatience{60000};  // guards a hang; never reached when all is well

int HealthStatus(int port) {
  return testing::StatusOf(testing::RawExchange(
      "127.0.0.1", port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
}

TEST(SparrowdNotifyTest, ReadyAfterListeningThenWatchdogPingsThenStopping) {
  const std::string model = testing::ModelPath("stories260K.gguf");
  if (!testing::FileExists(model)) GTEST_SKIP() << model << " is absent";
  testing::NotifySocket manager;
  ASSERT_TRUE(manager.ok());
  // A full socket: sparrowd's main thread stops in its first send, READY=1, until this test
  // reads. Whatever it did before READY=1 is done when Start sees the listening lines; sent too
  // early, READY=1 would hold it before it listens, and Start would fail.
  ASSERT_GT(manager.Fill(), 0);
  // The child inherits them; 0.4 s: a ping every 0.2 s, and a step stuck 0.4 s is a hang.
  ::setenv("NOTIFY_SOCKET", manager.name().c_str(), 1);
  ::setenv("WATCHDOG_USEC", "400000", 1);
  testing::SparrowdProcess::Options o;
  o.args = {"--model", model, "--port", "0", "--grpc-port", "0"};
  std::string error;
  auto sparrowd =
      testing::SparrowdProcess::Start(testing::SparrowdProcess::Binary(SPARROWD), o, &error);
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ASSERT_NE(sparrowd, nullptr) << error;
  // Clients are served before the manager hears READY=1 (which still waits in sparrowd).
  EXPECT_EQ(HealthStatus(sparrowd->http_port()), 200);

  std::string seen;
  ASSERT_TRUE(manager.WaitFor("READY=1", kPatience, &seen)) << "no READY=1; heard: " << seen << "\n"
                                                            << sparrowd->Stdout();
  EXPECT_EQ(seen, "READY=1\n") << "READY=1 must be the first state sent";
  const int port = sparrowd->http_port();

  // A completion goes through, and the scheduler keeps vouching for the server afterwards.
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":8,"temperature":0})";
  const std::string reply = testing::RawExchange(
      "127.0.0.1", port,
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(testing::StatusOf(reply), 200) << reply;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(manager.Receive(kPatience), "WATCHDOG=1") << "ping " << i;
  }

  sparrowd->Signal(SIGTERM);
  seen.clear();
  EXPECT_TRUE(manager.WaitFor("STOPPING=1", kPatience, &seen)) << seen;
  EXPECT_EQ(sparrowd->Wait(kPatience), 0) << sparrowd->Stdout() << sparrowd->Stderr();
}

TEST(SparrowdNotifyTest, MalformedNotifySocketIsAConfigError) {
  const std::string model = testing::ModelPath("stories260K.gguf");
  const testing::CommandResult r = testing::RunCommand(
      "NOTIFY_SOCKET=relative/notify " + testing::SparrowdProcess::Binary(SPARROWD) + " --model " +
      model + " --port 0 --grpc-port -1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("NOTIFY_SOCKET 'relative/notify'"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sparrow
