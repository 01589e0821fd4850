// sparrowd as a user runs it: the real process on a loopback port, real HTTP over a socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/util/converted_model.h"
#include "tests/util/golden.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

struct HttpReply {
  int status = 0;
  std::string body;
};

// One HTTP/1.1 request with Connection: close; the whole reply is read until EOF.
HttpReply Http(int port, const std::string& method, const std::string& path,
               const std::string& body = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty())
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, n);
  ::close(fd);
  HttpReply r;
  if (raw.size() > 12) r.status = std::stoi(raw.substr(9, 3));
  const size_t head_end = raw.find("\r\n\r\n");
  std::string payload = head_end == std::string::npos ? "" : raw.substr(head_end + 4);
  if (raw.substr(0, head_end).find("chunked") != std::string::npos) {
    std::string dechunked;
    size_t pos = 0;
    while (pos < payload.size()) {
      const size_t eol = payload.find("\r\n", pos);
      if (eol == std::string::npos) break;
      const size_t len = std::stoul(payload.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      dechunked += payload.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    payload = dechunked;
  }
  r.body = payload;
  return r;
}

class SparrowdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log_ = testing::TempPath("sparrowd.log");
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen(log_.c_str(), "w", stdout);
      std::freopen((log_ + ".err").c_str(), "w", stderr);
      const std::string model = testing::ModelPath("stories260K.gguf");
      ::execl(SPARROWD, SPARROWD, "--model", model.c_str(), "--port", "0", "--grpc-port", "-1",
              "--threads", "1", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    // The server prints where it listens once it is ready.
    const std::regex re("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 300 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::smatch m;
      const std::string out = testing::ReadFileOrDie(log_);
      if (std::regex_search(out, m, re)) port_ = std::stoi(m[1]);
    }
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void SetUp() override {
    ASSERT_NE(port_, 0) << "sparrowd did not start: " << testing::ReadFileOrDie(log_ + ".err");
  }

  static inline pid_t pid_ = -1;
  static inline int port_ = 0;
  static inline std::string log_;
};

TEST_F(SparrowdTest, GreedyCompletionMatchesLlamaCpp) {
  auto g = testing::LoadGolden(testing::TestdataPath("golden/stories260K.json"));
  HttpReply r = Http(port_, "POST", "/v1/completions",
                     R"({"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], g.prompts[0].generated_text_bytes);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 48);
}

TEST_F(SparrowdTest, StreamingAssemblesTheSameText) {
  auto g = testing::LoadGolden(testing::TestdataPath("golden/stories260K.json"));
  HttpReply r =
      Http(port_, "POST", "/v1/completions",
           R"({"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0, "stream": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::string text;
  bool done = false;
  size_t pos = 0;
  while ((pos = r.body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r.body.find("\n\n", pos);
    const std::string data = r.body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      break;
    }
    text += nlohmann::json::parse(data)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text, g.prompts[0].generated_text_bytes);
}

TEST_F(SparrowdTest, StopStringEndsTheCompletion) {
  HttpReply r = Http(
      port_, "POST", "/v1/completions",
      R"({"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0, "stop": ["Lily"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], ", there was a little girl named ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST_F(SparrowdTest, ChatAndModels) {
  HttpReply chat =
      Http(port_, "POST", "/v1/chat/completions",
           R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5, "n": 2})");
  ASSERT_EQ(chat.status, 200) << chat.body;
  auto j = nlohmann::json::parse(chat.body);
  EXPECT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["message"]["role"], "assistant");
  HttpReply models = Http(port_, "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(nlohmann::json::parse(models.body)["data"][0]["id"], "stories260K");
  EXPECT_EQ(Http(port_, "GET", "/health").status, 200);
}

TEST_F(SparrowdTest, BadRequestsGetOpenAiErrors) {
  struct Case {
    std::string path, body;
    int status;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", "{not json", 400, ""},
      {"/v1/completions", R"({"prompt": 5})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": "x", "temperature": "hot"})", 400, "temperature"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 100000})", 400, "context"},
      {"/v1/chat/completions", R"({"messages": "hi"})", 400, "messages"},
      {"/v1/completions", R"({"prompt": "x", "model": "gpt-4"})", 404, "gpt-4"},
      {"/v1/nothing", R"({})", 404, ""},
  };
  for (const Case& c : cases) {
    HttpReply r = Http(port_, "POST", c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.body << " -> " << r.body;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.body;
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << r.body;
  }
  HttpReply big =
      Http(port_, "POST", "/v1/completions", "{\"prompt\": \"" + std::string(2 << 20, 'a') + "\"}");
  EXPECT_EQ(big.status, 413) << big.body.substr(0, 200);
}

TEST_F(SparrowdTest, MetricsCountRequests) {
  ASSERT_EQ(Http(port_, "POST", "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})").status,
            200);
  HttpReply m = Http(port_, "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("sparrow_requests_total{status=\"length\"}"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("# TYPE"), std::string::npos);
}

// A converted PowerInfer file served with its FFN on flash (cache_mb 0: every neuron read when a
// token needs it): completions are the same as from the file in memory, and /metrics carries the
// neuron cache's counters; with io_depth 1 the reads are one pread at a time, and the same.
TEST(SparrowdFlashTest, ServesAConvertedModelFromFlashWithItsCounters) {
  const std::string src = testing::SharedDir() + "/pwri/models/pwri-bamboo-q4_0.gguf";
  if (!testing::FileExists(src)) GTEST_SKIP() << src << " is missing";
  const std::string converted = testing::ConvertedCopy(src, "sparrowd-bamboo");
  ASSERT_FALSE(converted.empty());
  const std::string request =
      R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})";
  std::string texts[3];
  for (int flash = 0; flash < 3; ++flash) {
    testing::SparrowdProcess::Options o;
    o.args = {"--model", converted, "--port", "0", "--grpc-port", "-1", "--threads", "1"};
    if (flash) o.args.insert(o.args.end(), {"--cache-mb", "0"});
    if (flash == 2) o.args.insert(o.args.end(), {"--io-depth", "1"});
    std::string error;
    auto p = testing::SparrowdProcess::Start(testing::SparrowdProcess::Binary(SPARROWD), o, &error);
    ASSERT_NE(p, nullptr) << error;
    HttpReply r = Http(p->http_port(), "POST", "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    texts[flash] = nlohmann::json::parse(r.body)["choices"][0]["text"];
    const std::string metrics = Http(p->http_port(), "GET", "/metrics").body;
    if (!flash) {
      EXPECT_EQ(metrics.find("sparrow_neuron_cache"), std::string::npos);
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        metrics, m, std::regex("sparrow_neuron_cache_lookups_total\\{result=\"miss\"\\} ([0-9]+)")))
        << metrics;
    EXPECT_GT(std::stoll(m[1]), 0);
    ASSERT_TRUE(
        std::regex_search(metrics, m, std::regex("sparrow_flash_read_bytes_total ([0-9.e+]+)")));
    EXPECT_GT(std::stod(m[1]), 0);
    if (flash == 2) {
      EXPECT_NE(p->Stdout().find("through pread"), std::string::npos) << p->Stdout();
    }
  }
  EXPECT_FALSE(texts[0].empty());
  EXPECT_EQ(texts[1], texts[0]);
  EXPECT_EQ(texts[2], texts[0]);
}

}  // namespace
}  // namespace sparrow
