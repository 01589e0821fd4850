// Models on demand (--models-dir) and idle sleep (--sleep-idle-seconds) against the real
// sparrowd on loopback: a temp models dir of symlinks to real tiny models, requests naming
// them, answers compared with each model's own greedy answer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

const char kStories[] = "stories260K";
const char kDreams[] = "aidreams260K-f32";

// A fresh directory of symlinks `name`.gguf -> `target`, plus the files given as bytes.
std::string MakeModelsDir(const std::map<std::string, std::string>& links,
                          const std::map<std::string, std::string>& files = {}) {
  const std::string dir = testing::TempPath("models");
  std::filesystem::create_directories(dir);
  for (const auto& [name, target] : links) {
    std::filesystem::create_symlink(target, dir + "/" + name + ".gguf");
  }
  for (const auto& [name, bytes] : files) std::ofstream(dir + "/" + name) << bytes;
  return dir;
}

// sparrowd over `dir`, serving `first` first, with `extra` flags.
std::unique_ptr<SparrowdProcess> StartServer(const std::string& dir, const std::string& first,
                                             const std::vector<std::string>& extra = {}) {
  SparrowdProcess::Options o;
  const std::pair<const char*, std::string> flags[] = {
      {"--models-dir", dir}, {"--model", first}, {"--port", "0"},
      {"--grpc-port", "-1"}, {"--threads", "1"}, {"--admin-loopback-open", "1"}};
  for (const auto& [flag, value] : flags) o.args.insert(o.args.end(), {flag, value});
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

struct Reply {
  int status = 0;
  std::string head;
  json body;
};

Reply Call(int port, const std::string& method, const std::string& path,
           const std::string& body = "") {
  std::string req = method + " " + path + " HTTP/1.0\r\n";
  if (!body.empty()) {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  const std::string raw = testing::RawExchange("127.0.0.1", port, req + "\r\n" + body);
  Reply r;
  r.status = testing::StatusOf(raw);
  const size_t end = raw.find("\r\n\r\n");
  r.head = raw.substr(0, end);
  if (end != std::string::npos) r.body = json::parse(raw.substr(end + 4), nullptr, false);
  return r;
}

// A greedy completion on `model`.
Reply Complete(int port, const std::string& model, const std::string& prompt = "Once upon") {
  json req = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}};
  if (!model.empty()) req["model"] = model;
  return Call(port, "POST", "/v1/completions", req.dump());
}

std::map<std::string, std::string> States(int port) {
  std::map<std::string, std::string> out;
  const Reply r = Call(port, "GET", "/v1/models");
  for (const json& m : r.body["data"]) out[m["id"]] = m["status"];
  return out;
}

class ModelsDirTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeModelsDir({{kStories, testing::ModelPath("stories260K.gguf")},
                                          {kDreams, testing::ModelPath("aidreams260K-f32.gguf")}},
                                         {{"broken.gguf", "GGUF but not really a model file"}}));
    server_ = StartServer(*dir_, "stories260K.gguf").release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  int port() const { return server_->http_port(); }

  static inline SparrowdProcess* server_ = nullptr;
  static inline std::string* dir_ = nullptr;
};

TEST_F(ModelsDirTest, ListsEveryModelByStemWithTheLoadedOneMarked) {
  const Reply r = Call(port(), "GET", "/v1/models");
  ASSERT_EQ(r.status, 200);
  std::map<std::string, bool> loaded;
  for (const json& m : r.body["data"]) loaded[m["id"]] = m["loaded"];
  EXPECT_EQ(loaded.size(), 3u) << r.body.dump();  // broken.gguf is listed: it is a .gguf file
  ASSERT_TRUE(loaded.count(kStories) && loaded.count(kDreams) && loaded.count("broken"));
  // Exactly one is loaded (which one depends on the tests run before).
  EXPECT_EQ(loaded[kStories] + loaded[kDreams] + loaded["broken"], 1);
  EXPECT_FALSE(loaded["broken"]);
  EXPECT_EQ(Call(port(), "GET", std::string("/v1/models/") + kDreams).status, 200);
}

TEST_F(ModelsDirTest, ANameNotInTheDirectoryIs404ModelNotFound) {
  for (const std::string name : {"gpt-4", "../models/stories260K", "stories260K.gguf"}) {
    const Reply r = Complete(port(), name);
    EXPECT_EQ(r.status, 404) << name;
    EXPECT_EQ(r.body["error"]["code"], "model_not_found") << r.body.dump();
    EXPECT_EQ(r.body["error"]["param"], "model");
  }
}

TEST_F(ModelsDirTest, SwitchingUnderLoadLosesAndMixesNoAnswer) {
  // Each model's own greedy answer, one request at a time (each a switch).
  std::map<std::string, std::string> expected;
  for (const char* m : {kStories, kDreams}) {
    const Reply r = Complete(port(), m);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["model"], m);
    expected[m] = r.body["choices"][0]["text"];
    EXPECT_EQ(States(port())[m], "loaded");
  }
  ASSERT_NE(expected[kStories], expected[kDreams]) << "the two models must answer differently";
  // Four clients, each alternating between the two models: every request is admitted by a
  // switch or rides one, and must get its own model's answer.
  constexpr int kClients = 4, kEach = 6;
  std::vector<std::vector<Reply>> replies(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) {
        replies[c].push_back(Complete(port(), (c + i) % 2 ? kDreams : kStories));
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < kEach; ++i) {
      const char* m = (c + i) % 2 ? kDreams : kStories;
      const Reply& r = replies[c][i];
      ASSERT_EQ(r.status, 200) << m << ": " << r.body.dump();
      EXPECT_EQ(r.body["model"], m);
      EXPECT_EQ(r.body["choices"][0]["text"], expected[m]) << "client " << c << " request " << i;
    }
  }
  // Switches are logged; there were some (at least one per model after the first two).
  EXPECT_NE(server_->Stdout().find("models: now serving 'aidreams260K-f32'"), std::string::npos);
}

TEST_F(ModelsDirTest, AFileThatFailsToLoadIsNamedAndTheOldModelKeepsServing) {
  const Reply before = Complete(port(), kStories);
  ASSERT_EQ(before.status, 200);
  const Reply r = Complete(port(), "broken");
  EXPECT_EQ(r.status, 500) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "model_load_failed");
  const std::string message = r.body["error"]["message"];
  EXPECT_NE(message.find("broken.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("'stories260K' keeps serving"), std::string::npos) << message;
  EXPECT_EQ(States(port())[kStories], "loaded");
  // The request naming no model is served by the old one, unchanged.
  const Reply after = Call(port(), "POST", "/v1/completions",
                           R"({"prompt": "Once upon", "max_tokens": 24, "temperature": 0})");
  ASSERT_EQ(after.status, 200);
  EXPECT_EQ(after.body["model"], kStories);
  EXPECT_EQ(after.body["choices"][0]["text"], before.body["choices"][0]["text"]);
}

TEST(ModelsSwitchWaitTest, PastTheWaitARequestGets503WithRetryAfterAndTheSwitchGoesOn) {
  const std::string dir = MakeModelsDir({{kStories, testing::ModelPath("stories260K.gguf")},
                                         {kDreams, testing::ModelPath("aidreams260K-f32.gguf")}});
  // A wait of 0: any request that needs a load is refused at once while the load goes on.
  auto server = StartServer(dir, "stories260K.gguf", {"--model-switch-wait-ms", "0"});
  ASSERT_NE(server, nullptr);
  const int port = server->http_port();
  const Reply refused = Complete(port, kDreams);
  EXPECT_EQ(refused.status, 503) << refused.body.dump();
  EXPECT_EQ(refused.body["error"]["code"], "model_unavailable");
  EXPECT_NE(refused.head.find("Retry-After: 1"), std::string::npos) << refused.head;
  // As a client honouring Retry-After would: the switch completes and the model answers.
  Reply r;
  for (int i = 0; i < 200 && r.status != 200; ++i) {
    r = Complete(port, kDreams);
    if (r.status != 200) {
      ASSERT_EQ(r.status, 503) << r.body.dump();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["model"], kDreams);
}

int64_t AdminState(int port, std::string* state) {
  const Reply r = Call(port, "GET", "/admin/v1/status");
  *state = r.body["model"].value("state", "");
  return r.body["memory"].value("rss_bytes", int64_t{0});
}

TEST(ModelsSleepTest, AnIdleModelIsUnloadedAndTheNextRequestLoadsItAgain) {
  // The 5M KJV model in f32 (20 MiB of weights) makes the fall in RSS plain.
  const std::string kjv = testing::SharedDir() + "/kjv/models/kjv-llama-5m-f32.gguf";
  if (!testing::FileExists(kjv)) GTEST_SKIP() << kjv << " is missing";
  const std::string dir = MakeModelsDir({{"kjv-5m", kjv}});
  auto server = StartServer(dir, "kjv-5m.gguf", {"--sleep-idle-seconds", "1"});
  ASSERT_NE(server, nullptr);
  const int port = server->http_port();
  const Reply first = Complete(port, "kjv-5m", "In the beginning");
  ASSERT_EQ(first.status, 200) << first.body.dump();
  const int64_t loaded_rss = server->ResidentBytes();
  // Poll the status (no fixed sleep) until the model sleeps.
  std::string state;
  for (int i = 0; i < 400 && state != "sleeping"; ++i) {
    AdminState(port, &state);
    if (state != "sleeping") std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(state, "sleeping");
  EXPECT_EQ(States(port)["kjv-5m"], "sleeping");
  const int64_t asleep_rss = server->ResidentBytes();
  EXPECT_LT(asleep_rss, loaded_rss - (12 << 20))
      << "RSS " << loaded_rss << " loaded, " << asleep_rss << " asleep";
  EXPECT_EQ(Call(port, "GET", "/admin/v1/memory").status, 503);
  // /health does not wake it; a request does, with the same answer as before.
  EXPECT_EQ(Call(port, "GET", "/health").body["model"], "kjv-5m");
  EXPECT_EQ(States(port)["kjv-5m"], "sleeping");
  const Reply again = Complete(port, "", "In the beginning");
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["choices"][0]["text"], first.body["choices"][0]["text"]);
  AdminState(port, &state);
  EXPECT_EQ(state, "loaded");
}

}  // namespace
}  // namespace sparrow
