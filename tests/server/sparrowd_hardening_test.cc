// sparrowd against careless and hostile clients, as a real child process on loopback: limits it
// advertises are kept, every bad request is answered, abandoned work is cancelled, and SIGTERM
// loses no response. Each test failed before the fix it covers (issue "Hardening").
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::ConnectTcp;
using testing::RawExchange;
using testing::ReadUntilClose;
using testing::SendAll;
using testing::SparrowdProcess;
using testing::StatusOf;

std::unique_ptr<SparrowdProcess> StartSparrowd(std::vector<std::string> extra,
                                               rlim_t max_open_files = 0) {
  SparrowdProcess::Options o;
  o.args = {"--model", testing::ModelPath("stories260K.gguf"), "--port", "0", "--threads", "1"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  o.max_open_files = max_open_files;
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

std::string PostRaw(const std::string& path, const std::string& b, bool http10 = false,
                    const std::string& connection = "close") {
  return std::string("POST ") + path + (http10 ? " HTTP/1.0" : " HTTP/1.1") +
         "\r\nHost: x\r\nContent-Type: application/json\r\nConnection: " + connection +
         "\r\nContent-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
}

std::string Post(const std::string& path, const json& body, bool http10 = false,
                 const std::string& connection = "close") {
  return PostRaw(path, body.dump(), http10, connection);
}

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
}

// A counter or gauge from /metrics; -1 when absent.
double Metric(int port, const std::string& series) {
  const std::string raw = RawExchange("127.0.0.1", port, Get("/metrics"));
  const size_t at = raw.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(raw.substr(at + series.size() + 2));
}

// Polls until `series` reaches `at_least`, up to `limit` (a liveness bound, not a speed claim).
bool WaitForMetric(int port, const std::string& series, double at_least,
                   std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Metric(port, series) >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Polls GET /health until it answers 200, up to 10 s (a liveness bound, not a speed claim).
bool ServesHealthSoon(int port) {
  for (int i = 0; i < 200; ++i) {
    if (StatusOf(RawExchange("127.0.0.1", port, Get("/health"))) == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The SSE payloads of a raw HTTP response (chunk framing, if any, is skipped over).
std::vector<std::string> Events(const std::string& raw) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = raw.find("data: ", pos)) != std::string::npos) {
    const size_t end = raw.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(raw.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

std::string BodyOf(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return at == std::string::npos ? "" : raw.substr(at + 4);
}

size_t CountLines(const std::string& log, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = 0; (pos = log.find(needle, pos)) != std::string::npos; pos += needle.size()) {
    ++n;
  }
  return n;
}

// --- Malformed HTTP (item 11) and HTTP/1.0 streams (item 9) -----------------------------------

class HardeningHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartSparrowd({"--grpc-port", "-1"}).release(); }
  static void TearDownTestSuite() { delete server_; }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  int port() const { return server_->http_port(); }
  static inline SparrowdProcess* server_ = nullptr;
};

TEST_F(HardeningHttpTest, HugeHeadersGet431) {
  const std::string big =
      "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 << 10, 'a') + "\r\n\r\n";
  const std::string r1 = RawExchange("127.0.0.1", port(), big);
  EXPECT_EQ(StatusOf(r1), 431) << r1.substr(0, 200);
  EXPECT_NE(BodyOf(r1).find("\"error\""), std::string::npos);
  std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 2000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  many += "\r\n";
  EXPECT_EQ(StatusOf(RawExchange("127.0.0.1", port(), many)), 431);
}

TEST_F(HardeningHttpTest, MalformedFramingGets400) {
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  const std::vector<std::string> requests = {
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n" + body,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n" +
          body,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n" + body,
      "HELLO THERE\r\n\r\n",
      "GET /health HTTP/1.1\r\nBad Header Name: v\r\n\r\n",
  };
  for (const std::string& req : requests) {
    const std::string r = RawExchange("127.0.0.1", port(), req);
    EXPECT_EQ(StatusOf(r), 400) << req.substr(0, 80) << " -> " << r.substr(0, 200);
    EXPECT_NE(BodyOf(r).find("Malformed HTTP request"), std::string::npos) << r;
  }
  // The server is still fine.
  EXPECT_EQ(StatusOf(RawExchange("127.0.0.1", port(), Get("/health"))), 200);
}

TEST_F(HardeningHttpTest, Http10StreamIsCloseDelimitedNotChunked) {
  const std::string r = RawExchange(
      "127.0.0.1", port(),
      Post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"stream", true}},
           /*http10=*/true));
  ASSERT_EQ(StatusOf(r), 200) << r;
  const std::string head = r.substr(0, r.find("\r\n\r\n"));
  EXPECT_EQ(head.find("chunked"), std::string::npos) << head;
  EXPECT_TRUE(BodyOf(r).starts_with("data: ")) << BodyOf(r).substr(0, 40);  // no chunk sizes
  const auto events = Events(r);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST_F(HardeningHttpTest, BadJsonValuesAreAnsweredNotDropped) {
  const std::string overflow = RawExchange(
      "127.0.0.1", port(), PostRaw("/v1/completions", R"({"prompt": "x", "temperature": 1e400})"));
  EXPECT_EQ(StatusOf(overflow), 400) << overflow;
  EXPECT_EQ(json::parse(BodyOf(overflow))["error"]["param"], "temperature");
  const std::string part = RawExchange(
      "127.0.0.1", port(),
      Post("/v1/chat/completions",
           json::parse(R"({"messages": [{"role": "user", "content": [{"type": 5}]}]})")));
  EXPECT_EQ(StatusOf(part), 400) << part;
  EXPECT_EQ(json::parse(BodyOf(part))["error"]["param"], "messages[0].content[0]");
}

// --- IPv6 listen addresses (item 10) -------------------------------------------------------------

TEST(HardeningIpv6Test, LoopbackV6ServesBothFrontends) {
  // Skip only where this machine cannot listen on ::1 at all.
  const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  any.sin6_addr = in6addr_loopback;
  const bool v6 = probe >= 0 && ::bind(probe, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0;
  if (probe >= 0) ::close(probe);
  if (!v6) GTEST_SKIP() << "this machine cannot listen on ::1";
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--grpc-port", "0",
            "--host",      "::1",
            "--threads",   "1"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_NE(p->Stdout().find("http://[::1]:"), std::string::npos) << p->Stdout();
  EXPECT_GT(p->grpc_port(), 0);
  EXPECT_EQ(StatusOf(RawExchange("::1", p->http_port(), Get("/health"))), 200);
  const int g = ConnectTcp("::1", p->grpc_port());
  EXPECT_GE(g, 0) << "the gRPC port does not accept on ::1";
  if (g >= 0) ::close(g);
}

// --- Abandoned non-stream requests (item 3) ----------------------------------------------------

TEST(HardeningAbandonTest, ClosedClientsAreCancelledAndFreeTheQueue) {
  // One group of four runs at a time, the others wait (the queue holds all of them even
  // before the first is admitted).
  auto p = StartSparrowd({"--grpc-port", "-1", "--max-running", "4", "--max-queue", "16"});
  ASSERT_NE(p, nullptr);
  const json long_request = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"n", 4}};
  for (int i = 0; i < 3; ++i) {
    const int fd = ConnectTcp("127.0.0.1", p->http_port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, Post("/v1/completions", long_request)));
    ::close(fd);  // walks away without reading
  }
  // Each would take seconds; all twelve choices are cancelled once their sockets are seen closed.
  EXPECT_TRUE(WaitForMetric(p->http_port(), "sparrow_requests_total{status=\"cancelled\"}", 12));
  EXPECT_EQ(Metric(p->http_port(), "sparrow_requests_total{status=\"length\"}"), 0);
  EXPECT_EQ(Metric(p->http_port(), "sparrow_kv_blocks_used"), 0);
  const std::string ok = RawExchange(
      "127.0.0.1", p->http_port(), Post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}}));
  EXPECT_EQ(StatusOf(ok), 200) << ok;
  EXPECT_EQ(CountLines(p->Stdout(), "POST /v1/completions 499"), 3u) << p->Stdout();
}

// --- Slow readers (item 4) ----------------------------------------------------------------------

TEST(HardeningSlowReaderTest, ReadersThatStallAreDroppedAtTheWriteTimeout) {
  auto p = StartSparrowd(
      {"--grpc-port", "-1", "--write-timeout-ms", "1000", "--max-buffered-bytes", "65536"});
  ASSERT_NE(p, nullptr);
  const int64_t rss_start = p->ResidentBytes();
  // ~6 MB (non-stream) and ~9 MB (stream) answers: more than the socket buffers hold.
  json big = {{"prompt", "Once upon a time"}, {"max_tokens", 700}, {"n", 16}, {"logprobs", 20}};
  std::vector<int> stalled;
  for (bool stream : {false, true}) {
    big["stream"] = stream;
    const int fd = ConnectTcp("127.0.0.1", p->http_port());
    ASSERT_GE(fd, 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ASSERT_TRUE(SendAll(fd, Post("/v1/completions", big)));
    stalled.push_back(fd);  // never read
  }
  // Both connections are dropped by the server, so only the /metrics call is left open.
  bool dropped = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!dropped && std::chrono::steady_clock::now() < deadline) {
    dropped = Metric(p->http_port(), "sparrow_http_connections_open") == 1;
    if (!dropped) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(dropped) << p->Stdout();
  // The stream's undelivered output went over the cap: its sixteen choices were cancelled.
  EXPECT_GE(Metric(p->http_port(), "sparrow_requests_total{status=\"cancelled\"}"), 16);
  EXPECT_TRUE(WaitForMetric(p->http_port(), "sparrow_kv_blocks_used", 0));
  // What the abandoned answers took goes back to the OS (the issue's case: 19 -> 478 MB, and
  // still 454 MB after the sockets were dropped).
  int64_t rss_end = p->ResidentBytes();
  for (int i = 0; i < 100 && rss_end > rss_start + (int64_t{64} << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss_end = p->ResidentBytes();
  }
  EXPECT_LE(rss_end, rss_start + (int64_t{64} << 20))
      << "RSS " << (rss_start >> 20) << " MiB at start, " << (rss_end >> 20) << " MiB after";
  std::printf("[slow reader] sparrowd RSS %lld MiB at start, %lld MiB after the drops\n",
              static_cast<long long>(rss_start >> 20), static_cast<long long>(rss_end >> 20));
  for (int fd : stalled) ::close(fd);
}

TEST(HardeningSlowReaderTest, TrickledRequestsHitTheRequestDeadline) {
  auto p = StartSparrowd({"--grpc-port", "-1", "--request-timeout-ms", "500"});
  ASSERT_NE(p, nullptr);
  const int fd = ConnectTcp("127.0.0.1", p->http_port());
  ASSERT_GE(fd, 0);
  // One header byte every 50 ms would keep a per-read idle timer alive for ever.
  const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(200, 'a');
  // Stop sending once the server has answered: bytes sent after it closes would reset the
  // connection and discard the answer before we read it.
  char byte = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    if (!SendAll(fd, head.substr(i, 1))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) break;
  }
  const std::string r = ReadUntilClose(fd);
  ::close(fd);
  EXPECT_EQ(StatusOf(r), 408) << r;
}

// --- Connection cap and descriptor exhaustion (items 4 and 5) ------------------------------------

TEST(HardeningConnectionsTest, ConnectionsBeyondTheCapGet503) {
  auto p = StartSparrowd({"--grpc-port", "-1", "--max-connections", "4"});
  ASSERT_NE(p, nullptr);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(ConnectTcp("127.0.0.1", p->http_port()));
    ASSERT_GE(idle.back(), 0);
  }
  // Once the server has accepted all four, a fifth connection is turned away.
  std::string r;
  for (int i = 0; i < 200 && StatusOf(r) != 503; ++i) {
    r = RawExchange("127.0.0.1", p->http_port(), Get("/health"));
    if (StatusOf(r) != 503) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(r.find("max_connections"), std::string::npos);
  for (int fd : idle) ::close(fd);
  EXPECT_TRUE(ServesHealthSoon(p->http_port()));
  EXPECT_GE(Metric(p->http_port(), "sparrow_http_connections_refused_total"), 1);
}

TEST(HardeningConnectionsTest, RunningOutOfDescriptorsBacksOffInsteadOfSpinning) {
  auto p = StartSparrowd({"--grpc-port", "-1"}, /*max_open_files=*/64);
  ASSERT_NE(p, nullptr);
  std::vector<int> idle;
  for (int i = 0; i < 80; ++i) {
    const int fd = ConnectTcp("127.0.0.1", p->http_port());
    if (fd >= 0) idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string log = p->Stdout();
  // One report per interval, not one per failed accept (1.6 million lines before the fix).
  EXPECT_LE(CountLines(log, "accept failed"), 2u) << log.substr(0, 2000);
  EXPECT_GE(CountLines(log, "accept failed"), 1u) << "the descriptor limit was not reached";
  for (int fd : idle) ::close(fd);
  EXPECT_TRUE(ServesHealthSoon(p->http_port()))
      << "the server did not recover once descriptors were free";
  EXPECT_GE(Metric(p->http_port(), "sparrow_http_accept_fd_errors_total"), 1);
}

// --- Shutdown (item 1; gRPC in tests/grpc/sparrowd_shutdown_test.cc) ----------------------------

TEST(HardeningShutdownTest, SigtermFinishesStreamsAndAnswersQueuedRequests) {
  // Timeout 0: SIGTERM cancels at once, so the answers below exist only if they are flushed.
  auto p = StartSparrowd({"--grpc-port", "-1", "--max-running", "4", "--shutdown-timeout-ms", "0"});
  ASSERT_NE(p, nullptr);
  const int stream_fd = ConnectTcp("127.0.0.1", p->http_port());
  ASSERT_GE(stream_fd, 0);
  ASSERT_TRUE(SendAll(
      stream_fd,
      Post("/v1/completions",
           {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"n", 4}, {"stream", true}})));
  // Once the stream is flowing (so it, not the next request, holds the running slots), a
  // second group is sent; it waits in the queue. Then stop the server.
  std::string head;
  char buf[4096];
  while (head.find("data: ") == std::string::npos) {
    const ssize_t n = ::recv(stream_fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    head.append(buf, static_cast<size_t>(n));
  }
  const int queued_fd = ConnectTcp("127.0.0.1", p->http_port());
  ASSERT_GE(queued_fd, 0);
  ASSERT_TRUE(SendAll(
      queued_fd,
      Post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"n", 4}})));
  ASSERT_TRUE(WaitForMetric(p->http_port(), "sparrow_queue_depth", 4));
  p->Signal(SIGTERM);
  const std::string stream = head + ReadUntilClose(stream_fd);
  const std::string queued = ReadUntilClose(queued_fd);
  ::close(stream_fd);
  ::close(queued_fd);
  EXPECT_EQ(p->Wait(std::chrono::seconds(30)), 0);

  // The stream: a finish event per choice, [DONE], and the chunked body's end.
  std::set<int> finished;
  for (const std::string& e : Events(stream)) {
    if (e == "[DONE]") continue;
    const json j = json::parse(e);
    if (!j["choices"][0]["finish_reason"].is_null())
      finished.insert(j["choices"][0]["index"].get<int>());
  }
  EXPECT_EQ(finished.size(), 4u) << stream.substr(stream.size() > 2000 ? stream.size() - 2000 : 0);
  ASSERT_FALSE(Events(stream).empty());
  EXPECT_EQ(Events(stream).back(), "[DONE]");
  EXPECT_TRUE(stream.ends_with("0\r\n\r\n"));
  // The queued request: a complete body, each choice saying why it ended.
  ASSERT_EQ(StatusOf(queued), 200) << queued;
  const json body = json::parse(BodyOf(queued));
  ASSERT_EQ(body["choices"].size(), 4u);
  for (const auto& c : body["choices"]) EXPECT_EQ(c["finish_reason"], "cancelled");
  // One log line per request, as in normal operation.
  EXPECT_EQ(CountLines(p->Stdout(), "POST /v1/completions 200"), 2u) << p->Stdout();
}

TEST(HardeningShutdownTest, AfterSigtermOpenConnectionsGet503AndNewOnesAreRefused) {
  auto p = StartSparrowd({"--grpc-port", "-1", "--shutdown-timeout-ms", "60000"});
  ASSERT_NE(p, nullptr);
  // A keep-alive connection that has already been used once.
  const int keep = ConnectTcp("127.0.0.1", p->http_port());
  ASSERT_GE(keep, 0);
  ASSERT_TRUE(SendAll(keep, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  char buf[4096];
  ASSERT_GT(::recv(keep, buf, sizeof buf, 0), 0);
  // A long stream keeps the server draining while we look. It is not read until the end, so
  // its ~8 MB cannot all be written before the keep-alive request arrives, however fast the
  // machine generates: our receive buffer is fixed at 64 KiB, and the server's send buffer grows
  // to the most net.ipv4.tcp_wmem allows (4 MiB by default; more tokens where it is larger).
  // 640 tokens of 16 choices at 20 logprobs: 5 s; 2000 at 5 logprobs (15 MB) took 45 s.
  int64_t send_buffer_max = 4 << 20;
  {
    std::ifstream wmem("/proc/sys/net/ipv4/tcp_wmem");
    int64_t least = 0, initial = 0, most = 0;
    if (wmem >> least >> initial >> most) send_buffer_max = std::max(send_buffer_max, most);
  }
  const int64_t max_tokens = std::min<int64_t>(2000, 640 * send_buffer_max / (4 << 20));
  const int stream_fd = ConnectTcp("127.0.0.1", p->http_port(), std::chrono::seconds(30), 64 << 10);
  ASSERT_GE(stream_fd, 0);
  ASSERT_TRUE(SendAll(stream_fd, Post("/v1/completions", {{"prompt", "Once upon a time"},
                                                          {"max_tokens", max_tokens},
                                                          {"n", 16},
                                                          {"logprobs", 20},
                                                          {"stream", true}})));
  ASSERT_GT(::recv(stream_fd, buf, sizeof buf, 0), 0);
  p->Signal(SIGTERM);
  // New connections are refused once the listener is closed.
  bool refused = false;
  for (int i = 0; i < 1000 && !refused; ++i) {
    const int fd = ConnectTcp("127.0.0.1", p->http_port());
    refused = fd < 0;
    if (fd >= 0) ::close(fd);
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(refused);
  ASSERT_TRUE(SendAll(
      keep, Post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}}, false, "keep-alive")));
  const std::string r = ReadUntilClose(keep);
  ::close(keep);
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(r.find("shutting down"), std::string::npos);
  // The stream still completes normally.
  const std::string rest = ReadUntilClose(stream_fd);
  ::close(stream_fd);
  ASSERT_FALSE(Events(rest).empty());
  EXPECT_EQ(Events(rest).back(), "[DONE]");
  EXPECT_EQ(p->Wait(std::chrono::seconds(60)), 0);
}

}  // namespace
}  // namespace sparrow
