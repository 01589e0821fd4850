// The admin API (remote control) of a real sparrowd child process on loopback, over HTTP
// (/admin/v1/) and gRPC (sparrow.admin.v1.Admin), and sparrowctl against it: keys and scopes,
// rate-limited failures, drain with streams in flight, listing and cancelling by id, the log
// level, the event streams and the audit log.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sparrow/admin/v1/admin.grpc.pb.h"
#include "sparrow/v1/sparrow.grpc.pb.h"
#include "tests/util/converted_model.h"
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
namespace adminpb = sparrow::admin::v1;

constexpr const char* kAdminKey = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
constexpr const char* kApiKey = "inference-key-1";
constexpr const char* kHostKey = "host-app-key-0123456789";

// A scratch directory with the key files and the audit log.
struct Files {
  std::string dir;
  Files() {
    char tmpl[] = "/tmp/sparrow_admin_XXXXXX";
    dir = mkdtemp(tmpl);
    Write("admin.keys", std::string("# operators\nlaptop ") + kAdminKey + "\n");
    Write("api.keys", std::string(kApiKey) + "\n");
    Write("host.keys", std::string("app ") + kHostKey + "\n");
  }
  ~Files() { std::system(("rm -rf " + dir).c_str()); }
  std::string Path(const std::string& name) const { return dir + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
    chmod(Path(name).c_str(), 0600);
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(Path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

std::unique_ptr<SparrowdProcess> Start(const Files& f, std::vector<std::string> extra = {},
                                       const std::string& model = "") {
  SparrowdProcess::Options o;
  o.args = {"--model",          model.empty() ? testing::ModelPath("stories260K.gguf") : model,
            "--port",           "0",
            "--grpc-port",      "0",
            "--threads",        "1",
            "--api-key-file",   f.Path("api.keys"),
            "--admin-key-file", f.Path("admin.keys"),
            "--host-key-file",  f.Path("host.keys"),
            "--audit-log",      f.Path("audit.jsonl")};
  if (std::find(extra.begin(), extra.end(), "--auth-failure-limit") == extra.end()) {
    extra.insert(extra.end(), {"--auth-failure-limit", "1000"});
  }
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

std::string Request(const std::string& method, const std::string& path, const std::string& key,
                    const std::string& body = "") {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

std::string Call(int port, const std::string& method, const std::string& path,
                 const std::string& key, const std::string& body = "") {
  return RawExchange("127.0.0.1", port, Request(method, path, key, body));
}

json BodyOf(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return json::parse(at == std::string::npos ? "" : raw.substr(at + 4), nullptr, false);
}

std::string Header(const std::string& raw, const std::string& name) {
  const size_t at = raw.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t start = at + name.size() + 4;
  return raw.substr(start, raw.find("\r\n", start) - start);
}

std::string Completion(int max_tokens, bool stream) {
  return Request(
      "POST", "/v1/completions", kApiKey,
      json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"stream", stream}}.dump());
}

std::unique_ptr<adminpb::Admin::Stub> AdminStub(int port) {
  return adminpb::Admin::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
}

void WithKey(grpc::ClientContext* c, const std::string& key) {
  if (!key.empty()) c->AddMetadata("authorization", "Bearer " + key);
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

// GetStatus with the admin key; fails the test when refused.
adminpb::ServerStatus GrpcStatus(int grpc_port) {
  auto stub = AdminStub(grpc_port);
  grpc::ClientContext c;
  WithKey(&c, kAdminKey);
  adminpb::ServerStatus s;
  const grpc::Status st = stub->GetStatus(&c, {}, &s);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return s;
}

// The host app's onTrimMemory level `level` (a name such as "TRIM_MEMORY_RUNNING_LOW"), sent with
// the host key through sparrow.v1.Sparrow/ReportMemoryPressure.
grpc::Status ReportTrim(int grpc_port, const std::string& level,
                        sparrow::v1::ReportMemoryPressureResponse* out) {
  auto app = sparrow::v1::Sparrow::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext c;
  WithKey(&c, kHostKey);
  sparrow::v1::ReportMemoryPressureRequest req;
  req.set_trim_level(level);
  return app->ReportMemoryPressure(&c, req, out);
}

// Polls the request list until `pred` holds for it (at most ~20 s).
json WaitForRequests(int port, const std::function<bool(const json&)>& pred) {
  json data;
  for (int i = 0; i < 400; ++i) {
    data = BodyOf(Call(port, "GET", "/admin/v1/requests", kAdminKey))["data"];
    if (pred(data)) return data;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return data;
}

// What the peer sends within `span` (a stream that never ends on its own), or until `enough`
// says it has what the test needs: a loaded machine may take longer, and that is not a failure.
std::string ReadFor(int fd, std::chrono::milliseconds span,
                    const std::function<bool(const std::string&)>& enough = nullptr) {
  const auto end = std::chrono::steady_clock::now() + span;
  std::string out;
  char buf[4096];
  while (!enough || !enough(out)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

using CtlRun = testing::CommandResult;

// Runs sparrowctl; stdout and stderr together. The operator's own device list stays out.
CtlRun Ctl(int grpc_port, const std::string& key_file, const std::string& args) {
  return testing::RunCommand("SPARROW_CTL_CONFIG=/dev/null " + std::string(SPARROWCTL) +
                             " --port " + std::to_string(grpc_port) +
                             (key_file.empty() ? "" : " --key-file " + key_file) + " " + args);
}

TEST(SparrowdAdminTest, EveryRouteAndRpcChecksTheAdminKey) {
  Files f;
  auto p = Start(f);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  struct Route {
    std::string method, path, body;
  };
  const std::vector<Route> routes = {
      {"GET", "/admin/v1/status", ""},
      {"GET", "/admin/v1/requests", ""},
      {"DELETE", "/admin/v1/requests/req-999", ""},
      {"POST", "/admin/v1/drain", ""},
      {"POST", "/admin/v1/resume", ""},
      {"PUT", "/admin/v1/log-level", R"({"level":"info"})"},
      {"GET", "/admin/v1/models", ""},
      {"POST", "/admin/v1/reload", R"({"model":"x"})"},
      {"GET", "/admin/v1/memory", ""},
      {"PUT", "/admin/v1/memory/budget", R"({"bytes":1099511627776})"},
      {"DELETE", "/admin/v1/memory/budget", ""},
      {"POST", "/admin/v1/memory/replan", ""},
      {"GET", "/admin/v1/nothing-here", ""}};
  for (const Route& r : routes) {
    SCOPED_TRACE(r.method + " " + r.path);
    EXPECT_EQ(StatusOf(Call(port, r.method, r.path, "", r.body)), 401);
    EXPECT_EQ(StatusOf(Call(port, r.method, r.path, "wrong-key-wrong-key", r.body)), 401);
    const std::string inference = Call(port, r.method, r.path, kApiKey, r.body);
    EXPECT_EQ(StatusOf(inference), 403);
    EXPECT_EQ(BodyOf(inference)["error"]["code"], "insufficient_scope");
    const int ok = StatusOf(Call(port, r.method, r.path, kAdminKey, r.body));
    // Without --model-dir the model routes answer 403 reload_disabled past the key check.
    const int want = r.path.ends_with("req-999") || r.path.ends_with("nothing-here") ? 404
                     : r.path.ends_with("models") || r.path.ends_with("reload")      ? 403
                                                                                     : 200;
    EXPECT_EQ(ok, want);
  }
  // The admin key is good for inference too; the inference key for nothing admin.
  EXPECT_EQ(StatusOf(Call(port, "GET", "/v1/models", kAdminKey)), 200);
  EXPECT_EQ(StatusOf(Call(port, "GET", "/v1/models", "")), 401);

  auto stub = AdminStub(p->grpc_port());
  auto check = [&](const std::string& key, grpc::StatusCode want) {
    SCOPED_TRACE("key '" + key + "'");
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::ServerStatus s;
      EXPECT_EQ(stub->GetStatus(&c, {}, &s).error_code(), want);
      if (want == grpc::StatusCode::OK) {
        EXPECT_EQ(s.model().id(), "stories260K");
      }
    }
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::ListRequestsResponse r;
      EXPECT_EQ(stub->ListRequests(&c, {}, &r).error_code(), want);
    }
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::DrainResponse r;
      EXPECT_EQ(stub->Resume(&c, {}, &r).error_code(), want);
    }
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::SetLogLevelRequest req;
      req.set_level("info");
      adminpb::SetLogLevelResponse r;
      EXPECT_EQ(stub->SetLogLevel(&c, req, &r).error_code(), want);
    }
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::Shards r;
      EXPECT_EQ(stub->GetShards(&c, {}, &r).error_code(), want);
      if (want == grpc::StatusCode::OK) {
        // One device computes every layer.
        ASSERT_EQ(r.placement_size(), 1);
        EXPECT_EQ(r.placement(0).device(), "this device");
        EXPECT_GT(r.placement(0).end_layer(), 0);
        EXPECT_EQ(r.links_size(), 0);
      }
    }
    {
      grpc::ClientContext c;
      WithKey(&c, key);
      adminpb::Event e;
      auto reader = stub->WatchEvents(&c, {});
      if (want == grpc::StatusCode::OK) {
        ASSERT_TRUE(reader->Read(&e));
        EXPECT_TRUE(e.has_status());
        c.TryCancel();
        while (reader->Read(&e)) {
        }
      }
      const grpc::Status st = reader->Finish();
      if (want != grpc::StatusCode::OK) {
        EXPECT_EQ(st.error_code(), want);
      }
    }
  };
  check("", grpc::StatusCode::UNAUTHENTICATED);
  check("wrong-key-wrong-key", grpc::StatusCode::UNAUTHENTICATED);
  check(kApiKey, grpc::StatusCode::PERMISSION_DENIED);
  check(kAdminKey, grpc::StatusCode::OK);
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::CancelRequestRequest req;
    req.set_id("req-12345");
    adminpb::CancelRequestResponse r;
    EXPECT_EQ(stub->CancelRequest(&c, req, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST(SparrowdAdminTest, WithoutAnAdminKeyTheAdminApiIsOff) {
  Files f;
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--grpc-port", "0",
            "--threads",   "1"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  const std::string raw = Call(p->http_port(), "GET", "/admin/v1/status", kAdminKey);
  EXPECT_EQ(StatusOf(raw), 403);
  EXPECT_EQ(BodyOf(raw)["error"]["code"], "admin_disabled");
  auto stub = AdminStub(p->grpc_port());
  grpc::ClientContext c;
  WithKey(&c, kAdminKey);
  adminpb::ServerStatus s;
  EXPECT_EQ(stub->GetStatus(&c, {}, &s).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST(SparrowdAdminTest, RepeatedFailuresLockTheAddressOutAndAreLogged) {
  Files f;
  auto p = Start(f, {"--auth-failure-limit", "3"});
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", "guess-" + std::to_string(i))), 401);
  }
  // Locked out: even the right key is refused until the window passes.
  const std::string raw = Call(port, "GET", "/admin/v1/status", kAdminKey);
  EXPECT_EQ(StatusOf(raw), 429);
  EXPECT_FALSE(Header(raw, "Retry-After").empty());
  EXPECT_EQ(BodyOf(raw)["error"]["code"], "too_many_auth_failures");
  // gRPC shares the count: the same address is refused there too.
  auto stub = AdminStub(p->grpc_port());
  grpc::ClientContext c;
  WithKey(&c, kAdminKey);
  adminpb::ServerStatus s;
  EXPECT_EQ(stub->GetStatus(&c, {}, &s).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(p->Stdout().find("3 failed attempts from 127.0.0.1"), std::string::npos) << p->Stdout();
}

TEST(SparrowdAdminTest, DrainLetsStreamsFinishAndRefusesNewWorkUntilResume) {
  Files f;
  auto p = Start(f, {"--max-running", "1"});
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  EXPECT_EQ(StatusOf(Call(port, "GET", "/ready", "")), 200);
  // One stream running, one queued behind it.
  auto stream = std::async(std::launch::async,
                           [&] { return RawExchange("127.0.0.1", port, Completion(1500, true)); });
  auto queued = std::async(std::launch::async,
                           [&] { return RawExchange("127.0.0.1", port, Completion(1500, false)); });
  WaitForRequests(port, [](const json& d) { return d.size() == 2; });
  const json drained = BodyOf(Call(port, "POST", "/admin/v1/drain", kAdminKey));
  EXPECT_EQ(drained["draining"], true);
  // /ready, what a balancer checks, says a request sent now would not be admitted.
  const std::string not_ready = Call(port, "GET", "/ready", "");
  EXPECT_EQ(StatusOf(not_ready), 503);
  EXPECT_EQ(BodyOf(not_ready)["reason"], "draining") << not_ready;
  EXPECT_EQ(BodyOf(not_ready)["ready"], false);
  EXPECT_FALSE(Header(not_ready, "Retry-After").empty());

  const std::string refused = RawExchange("127.0.0.1", port, Completion(5, false));
  EXPECT_EQ(StatusOf(refused), 503);
  EXPECT_EQ(BodyOf(refused)["error"]["code"], "draining");
  EXPECT_EQ(StatusOf(Call(port, "GET", "/health", "")), 503);

  const std::string s = stream.get();
  EXPECT_EQ(StatusOf(s), 200);
  EXPECT_NE(s.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_NE(s.find("data: [DONE]"), std::string::npos);
  const std::string q = queued.get();
  EXPECT_EQ(StatusOf(q), 200);
  EXPECT_EQ(BodyOf(q)["choices"][0]["finish_reason"], "length");

  json status;
  std::string raw_status;
  for (int i = 0; i < 100 && !(status.is_object() && status.value("drained", false)); ++i) {
    raw_status = Call(port, "GET", "/admin/v1/status", kAdminKey);
    status = BodyOf(raw_status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status["drained"], true) << raw_status;
  EXPECT_EQ(BodyOf(Call(port, "POST", "/admin/v1/resume", kAdminKey))["draining"], false);
  EXPECT_EQ(StatusOf(RawExchange("127.0.0.1", port, Completion(5, false))), 200);
  EXPECT_EQ(StatusOf(Call(port, "GET", "/health", "")), 200);
  EXPECT_EQ(StatusOf(Call(port, "GET", "/ready", "")), 200);
}

// A model_dir with two real models (symlinks, as an operator would make them), a file that
// is not a model, and something that is not a .gguf at all.
void MakeModelDir(const Files& f) {
  const std::string dir = f.Path("models");
  mkdir(dir.c_str(), 0700);
  symlink(testing::ModelPath("stories260K.gguf").c_str(), (dir + "/stories260K.gguf").c_str());
  symlink(testing::ModelPath("aidreams260K-q8_0.gguf").c_str(), (dir + "/aidreams.gguf").c_str());
  f.Write("models/broken.gguf", "GGUF but not really a model");
  f.Write("models/notes.txt", "not a model");
  f.Write("secret.gguf", "outside model_dir");
}

std::string ReloadBody(const std::string& name) {
  return json{{"model", name}}.dump();
}

TEST(SparrowdAdminTest, ReloadSwitchesModelsAfterStreamsFinishAndKeepsTheOldOneOnFailure) {
  Files f;
  MakeModelDir(f);
  auto p = Start(f, {"--model-dir", f.Path("models"), "--max-running", "1"});
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();

  const json models = BodyOf(Call(port, "GET", "/admin/v1/models", kAdminKey));
  ASSERT_EQ(models["data"].size(), 3u) << models.dump();  // the .gguf entries only
  EXPECT_EQ(models["data"][0]["name"], "aidreams.gguf");
  EXPECT_EQ(models["data"][2]["name"], "stories260K.gguf");
  EXPECT_EQ(models["data"][2]["serving"], true);

  // Names that reach outside model_dir, or nothing, are refused before anything is loaded.
  for (const std::string bad :
       {"../secret.gguf", "../secret", "/etc/passwd", "models/x.gguf", ".hidden.gguf", ""}) {
    SCOPED_TRACE(bad);
    const std::string r = Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody(bad));
    EXPECT_EQ(StatusOf(r), 400) << r;
    EXPECT_EQ(BodyOf(r)["error"]["code"], "invalid_model_name") << r;
  }
  const std::string missing =
      Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody("nope.gguf"));
  EXPECT_EQ(StatusOf(missing), 404) << missing;
  EXPECT_EQ(BodyOf(missing)["error"]["code"], "model_not_found");
  EXPECT_EQ(StatusOf(Call(port, "POST", "/admin/v1/reload", kAdminKey, "{\"model\": 5}")), 400);

  // A file that does not load: the loader's error, and the old model keeps serving.
  const std::string broken =
      Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody("broken"));
  EXPECT_EQ(StatusOf(broken), 422) << broken;
  EXPECT_EQ(BodyOf(broken)["error"]["code"], "model_load_failed");
  EXPECT_NE(BodyOf(broken)["error"]["message"].get<std::string>().find("broken.gguf"),
            std::string::npos)
      << broken;
  const std::string still = RawExchange("127.0.0.1", port, Completion(4, false));
  EXPECT_EQ(StatusOf(still), 200) << still;
  EXPECT_EQ(BodyOf(still)["model"], "stories260K");
  EXPECT_EQ(BodyOf(Call(port, "GET", "/health", ""))["status"], "ok");

  // A stream in flight finishes on the old model; then the new one serves.
  auto stream = std::async(std::launch::async,
                           [&] { return RawExchange("127.0.0.1", port, Completion(600, true)); });
  WaitForRequests(port, [](const json& d) { return d.size() == 1; });
  const std::string reloaded =
      Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody("aidreams.gguf"));
  ASSERT_EQ(StatusOf(reloaded), 200) << reloaded;
  EXPECT_EQ(BodyOf(reloaded)["model"]["id"], "aidreams");
  EXPECT_EQ(BodyOf(reloaded)["previous"], "stories260K");
  const std::string s = stream.get();
  EXPECT_EQ(StatusOf(s), 200);
  EXPECT_NE(s.find("\"finish_reason\":\"length\""), std::string::npos) << s.substr(0, 400);
  EXPECT_NE(s.find("\"model\":\"stories260K\""), std::string::npos);

  const std::string after = RawExchange("127.0.0.1", port, Completion(4, false));
  EXPECT_EQ(StatusOf(after), 200) << after;
  EXPECT_EQ(BodyOf(after)["model"], "aidreams");
  EXPECT_EQ(BodyOf(Call(port, "GET", "/v1/models", kApiKey))["data"][0]["id"], "aidreams");
  EXPECT_EQ(BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey))["model"]["file"],
            "aidreams.gguf");
  EXPECT_EQ(BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey))["draining"], false);

  // Back over gRPC, and sparrowctl lists and switches too.
  auto stub = AdminStub(p->grpc_port());
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::ListModelsResponse r;
    ASSERT_TRUE(stub->ListModels(&c, {}, &r).ok());
    ASSERT_EQ(r.data_size(), 3);
    EXPECT_TRUE(r.data(0).serving());
  }
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::ReloadRequest req;
    req.set_model("../secret");
    adminpb::ReloadResponse r;
    EXPECT_EQ(stub->Reload(&c, req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::ReloadRequest req;
    req.set_model("broken.gguf");
    adminpb::ReloadResponse r;
    EXPECT_EQ(stub->Reload(&c, req, &r).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  }
  const CtlRun ctl = Ctl(p->grpc_port(), f.Path("admin.keys"), "--json reload stories260K");
  ASSERT_EQ(ctl.exit_code, 0) << ctl.out;
  const json out = json::parse(ctl.out, nullptr, false);
  EXPECT_EQ(out["model"]["id"], "stories260K") << ctl.out;
  EXPECT_EQ(out["previous"], "aidreams") << ctl.out;
  const CtlRun listed = Ctl(p->grpc_port(), f.Path("admin.keys"), "models");
  EXPECT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_NE(listed.out.find("* stories260K.gguf"), std::string::npos) << listed.out;
  EXPECT_EQ(BodyOf(RawExchange("127.0.0.1", port, Completion(4, false)))["model"], "stories260K");

  // Every attempt is in the audit log, refusals included.
  const std::string audit = f.Read("audit.jsonl");
  size_t reloads = 0;
  for (size_t at = audit.find("\"action\":\"reload\""); at != std::string::npos;
       at = audit.find("\"action\":\"reload\"", at + 1)) {
    ++reloads;
  }
  EXPECT_EQ(reloads, 6u + 1 + 1 + 1 + 1 + 2 + 1) << audit;
}

// A reload keeps the server's settings where the new model can take them: the neuron cache and
// the operator's budget go to another converted file; a file that cannot have its FFN on flash
// (not converted) is served without the cache instead of being refused.
TEST(SparrowdAdminTest, AReloadKeepsTheCacheAndTheOperatorsBudget) {
  const std::string src = testing::SharedDir() + "/pwri/models/pwri-bamboo-q4_0.gguf";
  if (!testing::FileExists(src)) GTEST_SKIP() << src << " is missing";
  const std::string converted = testing::ConvertedCopy(src, "admin-reload-bamboo");
  ASSERT_FALSE(converted.empty());
  Files f;
  const std::string dir = f.Path("models");
  mkdir(dir.c_str(), 0700);
  ASSERT_EQ(symlink(converted.c_str(), (dir + "/first.gguf").c_str()), 0);
  ASSERT_EQ(symlink(converted.c_str(), (dir + "/second.gguf").c_str()), 0);
  ASSERT_EQ(
      symlink(testing::ModelPath("stories260K.gguf").c_str(), (dir + "/stories260K.gguf").c_str()),
      0);
  auto p = Start(f, {"--model-dir", dir, "--cache-mb", "2", "--memory-pressure", "2"},
                 dir + "/first.gguf");
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  json m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  const uint64_t budget = m["floor_bytes"].get<uint64_t>() + (1 << 20);
  m = BodyOf(
      Call(port, "PUT", "/admin/v1/memory/budget", kAdminKey, json{{"bytes", budget}}.dump()));
  ASSERT_EQ(m["operator_budget_bytes"], budget) << m.dump();

  std::string r = Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody("second.gguf"));
  ASSERT_EQ(StatusOf(r), 200) << r;
  m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  EXPECT_EQ(m["operator_budget_bytes"], budget) << m.dump();
  EXPECT_EQ(m["budget_bytes"], budget) << m.dump();
  EXPECT_EQ(m["consumers"]["neuron_cache_bytes"], 1u << 20) << m.dump();
  ASSERT_TRUE(m.contains("neuron_cache")) << "the FFN stays on flash: " << m.dump();

  r = Call(port, "POST", "/admin/v1/reload", kAdminKey, ReloadBody("stories260K.gguf"));
  ASSERT_EQ(StatusOf(r), 200) << r;
  const std::string done = RawExchange("127.0.0.1", port, Completion(4, false));
  EXPECT_EQ(StatusOf(done), 200) << done;
  EXPECT_EQ(BodyOf(done)["model"], "stories260K");
  m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  EXPECT_FALSE(m.contains("neuron_cache")) << "served from memory: " << m.dump();
  EXPECT_EQ(m["consumers"]["neuron_cache_bytes"], 0) << m.dump();
}

TEST(SparrowdAdminTest, ListsRequestsWithoutPromptsAndCancelsOneById) {
  Files f;
  // One request runs at a time, so the later ones wait in the queue long enough to be seen.
  auto p = Start(f, {"--max-running", "1"});
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  std::vector<std::future<std::string>> answers;
  for (int i = 0; i < 4; ++i) {
    answers.push_back(std::async(std::launch::async, [&] {
      return RawExchange("127.0.0.1", port, Completion(1500, false));
    }));
  }
  const json list = WaitForRequests(port, [](const json& d) {
    return d.size() >= 2 && d[0]["state"] == "running" && d.back()["state"] == "waiting";
  });
  ASSERT_GE(list.size(), 2u) << list.dump();
  const json r = list.back();
  EXPECT_EQ(r["frontend"], "http");
  EXPECT_EQ(r["route"], "/v1/completions");
  EXPECT_EQ(r["key_id"], "api:api.keys:1");
  EXPECT_EQ(r["max_tokens"], 1500);
  EXPECT_GT(r["prompt_tokens"].get<int>(), 1);
  EXPECT_TRUE(std::string(r["remote"]).starts_with("127.0.0.1:"));
  EXPECT_FALSE(r.contains("prompt"));
  const json with_prompt =
      BodyOf(Call(port, "GET", "/admin/v1/requests?prompt=1", kAdminKey))["data"];
  ASSERT_FALSE(with_prompt.empty());
  EXPECT_NE(std::string(with_prompt[0]["prompt"]).find("Once upon a time"), std::string::npos);

  const std::string id = r["id"];
  const std::string cancel = Call(port, "DELETE", "/admin/v1/requests/" + id, kAdminKey);
  EXPECT_EQ(StatusOf(cancel), 200);
  EXPECT_EQ(BodyOf(cancel)["cancelled"], true);
  int cancelled = 0, finished = 0;
  for (auto& a : answers) {
    const std::string answer = a.get();
    EXPECT_EQ(StatusOf(answer), 200);
    const std::string reason = BodyOf(answer)["choices"][0]["finish_reason"];
    if (Header(answer, "X-Request-Id") == id) {
      EXPECT_EQ(reason, "cancelled");
      ++cancelled;
    } else {
      EXPECT_EQ(reason, "length");
      ++finished;
    }
  }
  EXPECT_EQ(cancelled, 1);
  EXPECT_EQ(finished, 3);
  EXPECT_EQ(StatusOf(Call(port, "DELETE", "/admin/v1/requests/" + id, kAdminKey)), 404);
  EXPECT_TRUE(WaitForRequests(port, [](const json& d) { return d.empty(); }).empty());

  // Every action is in the audit log with who did it.
  const std::string audit = f.Read("audit.jsonl");
  std::istringstream lines(audit);
  std::string line;
  std::vector<json> records;
  while (std::getline(lines, line)) records.push_back(json::parse(line));
  ASSERT_EQ(records.size(), 3u) << audit;  // list_prompts, cancel ok, cancel not_found
  EXPECT_EQ(records[0]["action"], "list_prompts");
  EXPECT_EQ(records[1]["action"], "cancel");
  EXPECT_EQ(records[1]["args"]["id"], id);
  EXPECT_EQ(records[1]["result"], "ok");
  EXPECT_EQ(records[1]["key_id"], "admin:laptop");
  EXPECT_TRUE(std::string(records[1]["remote"]).starts_with("127.0.0.1:"));
  EXPECT_FALSE(std::string(records[1]["time"]).empty());
  EXPECT_EQ(records[2]["result"], "not_found");
}

TEST(SparrowdAdminTest, LogLevelChangesAtRunTimeAndBadLevelsAreRefused) {
  Files f;
  auto p = Start(f);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  EXPECT_EQ(StatusOf(Call(port, "PUT", "/admin/v1/log-level", kAdminKey, R"({"level":"loud"})")),
            400);
  EXPECT_EQ(StatusOf(Call(port, "PUT", "/admin/v1/log-level", kAdminKey, "not json")), 400);
  EXPECT_EQ(StatusOf(Call(port, "PUT", "/admin/v1/log-level", kAdminKey, R"({"level":"warn"})")),
            200);
  EXPECT_EQ(BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey))["log_level"], "warning");
  // At warn, request lines (info) are no longer written.
  const size_t before = p->Stdout().size();
  EXPECT_EQ(StatusOf(Call(port, "GET", "/v1/models", kApiKey)), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(p->Stdout().substr(before).find("GET /v1/models"), std::string::npos);
}

TEST(SparrowdAdminTest, EventStreamSendsStatusEverySecondAndEachAction) {
  Files f;
  auto p = Start(f);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  const int fd = ConnectTcp("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, Request("GET", "/admin/v1/events", kAdminKey)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(StatusOf(Call(port, "POST", "/admin/v1/drain", kAdminKey)), 200);
  auto statuses = [](const std::string& raw) {
    size_t n = 0;
    for (size_t at = raw.find("event: status"); at != std::string::npos;
         at = raw.find("event: status", at + 1)) {
      ++n;
    }
    return n;
  };
  // Two statuses and the action, however long a loaded machine takes to send them.
  const std::string raw = ReadFor(fd, std::chrono::seconds(60), [&](const std::string& r) {
    const size_t a = r.find("event: action");
    return statuses(r) >= 2 && a != std::string::npos &&
           r.find('\n', r.find("data: ", a)) != std::string::npos;
  });
  close(fd);
  EXPECT_EQ(StatusOf(raw), 200);
  EXPECT_NE(raw.find("text/event-stream"), std::string::npos);
  EXPECT_GE(statuses(raw), 2u) << raw;
  const size_t action = raw.find("event: action");
  ASSERT_NE(action, std::string::npos) << raw;
  const size_t data = raw.find("data: ", action);
  const json event = json::parse(raw.substr(data + 6, raw.find('\n', data) - data - 6));
  EXPECT_EQ(event["action"], "drain");
  EXPECT_EQ(event["key_id"], "admin:laptop");
}

TEST(SparrowdAdminTest, KeyFilesAreRereadWhenTheyChange) {
  Files f;
  auto p = Start(f);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  const std::string next = "ffffeeeeddddccccbbbbaaaa99998888";
  EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", next)), 401);
  // Rotation: the new key joins, then the old one leaves.
  f.Write("admin.keys", std::string("laptop ") + kAdminKey + "\nphone " + next + "\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", next)), 200);
  EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", kAdminKey)), 200);
  f.Write("admin.keys", "phone " + next + "\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", kAdminKey)), 401);
  EXPECT_EQ(StatusOf(Call(port, "GET", "/admin/v1/status", next)), 200);
}

TEST(SparrowdAdminTest, SparrowctlStatusRequestsCancelDrainAndErrors) {
  Files f;
  auto p = Start(f, {"--max-running", "1"});
  ASSERT_NE(p, nullptr);
  const int g = p->grpc_port();
  const std::string keys = f.Path("admin.keys");

  CtlRun status = Ctl(g, keys, "--json status");
  ASSERT_EQ(status.exit_code, 0) << status.out;
  const json s = json::parse(status.out);
  EXPECT_EQ(s["model"]["id"], "stories260K");
  EXPECT_EQ(s["draining"], false);
  EXPECT_GT(std::stoll(s["kv"]["blocks_total"].get<std::string>()), 0);
  CtlRun after = Ctl(g, keys, "status --json");  // global flags after the subcommand too
  ASSERT_EQ(after.exit_code, 0) << after.out;
  EXPECT_EQ(json::parse(after.out)["model"]["id"], "stories260K");
  CtlRun human = Ctl(g, keys, "status");
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("stories260K"), std::string::npos) << human.out;

  std::vector<std::future<std::string>> answers;
  for (int i = 0; i < 4; ++i) {
    answers.push_back(std::async(std::launch::async, [&] {
      return RawExchange("127.0.0.1", p->http_port(), Completion(1500, false));
    }));
  }
  WaitForRequests(p->http_port(),
                  [](const json& d) { return d.size() >= 3 && d.back()["state"] == "waiting"; });
  CtlRun requests = Ctl(g, keys, "--json requests");
  ASSERT_EQ(requests.exit_code, 0) << requests.out;
  const json r = json::parse(requests.out);
  ASSERT_GE(r["data"].size(), 2u) << requests.out;
  const std::string id = r["data"].back()["id"];
  EXPECT_EQ(r["data"].back()["state"], "waiting");
  CtlRun cancel = Ctl(g, keys, "cancel " + id);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out;
  int cancelled = 0;
  for (auto& a : answers) {
    const std::string answer = a.get();
    if (Header(answer, "X-Request-Id") == id) {
      EXPECT_EQ(BodyOf(answer)["choices"][0]["finish_reason"], "cancelled");
      ++cancelled;
    }
  }
  EXPECT_EQ(cancelled, 1);
  CtlRun again = Ctl(g, keys, "cancel " + id);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("no request '" + id + "'"), std::string::npos) << again.out;

  CtlRun drain = Ctl(g, keys, "--json drain --wait");
  ASSERT_EQ(drain.exit_code, 0) << drain.out;
  EXPECT_EQ(json::parse(drain.out)["drained"], true);
  EXPECT_EQ(StatusOf(RawExchange("127.0.0.1", p->http_port(), Completion(5, false))), 503);
  EXPECT_EQ(Ctl(g, keys, "resume").exit_code, 0);

  CtlRun watch = Ctl(g, keys, "--json watch --count 2");
  ASSERT_EQ(watch.exit_code, 0) << watch.out;
  std::istringstream lines(watch.out);
  std::string line;
  int events = 0;
  while (std::getline(lines, line)) {
    if (json::parse(line).contains("status")) ++events;
  }
  EXPECT_EQ(events, 2) << watch.out;

  CtlRun no_key = Ctl(g, "", "status");
  EXPECT_EQ(no_key.exit_code, 1);
  EXPECT_NE(no_key.out.find("--key-file"), std::string::npos) << no_key.out;
  CtlRun unreachable = Ctl(1, keys, "--timeout-ms 2000 status");
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.out.find("cannot reach"), std::string::npos) << unreachable.out;
}

// The operator moves the memory budget of a model on flash: GET shows it and its split among
// weights, scratch, KV pool and neuron cache; PUT sets the whole process's budget (applied
// between two steps: at the floor the cache empties and the KV pool holds one context, their
// memory given back), DELETE clears it, POST replan issues a new plan; completions stay the same
// throughout; bad bodies are refused; /metrics follows.
// A server started without memory control says so (400 / UNIMPLEMENTED), and sparrowctl
// passes the reason on instead of calling the server unreachable.
TEST(SparrowdAdminTest, MemoryControlThatIsOffSaysSo) {
  Files f;
  auto p = Start(f, {"--memory-pressure", "0"});
  ASSERT_NE(p, nullptr);
  const std::string r = Call(p->http_port(), "GET", "/admin/v1/memory", kAdminKey);
  EXPECT_EQ(StatusOf(r), 400) << r;
  EXPECT_NE(r.find("memory budget control is off"), std::string::npos) << r;
  const CtlRun ctl = Ctl(p->grpc_port(), f.Path("admin.keys"), "budget");
  EXPECT_EQ(ctl.exit_code, 1) << ctl.out;
  EXPECT_NE(ctl.out.find("memory budget control is off"), std::string::npos) << ctl.out;
  EXPECT_EQ(ctl.out.find("cannot reach"), std::string::npos) << ctl.out;
  // The status shows neither a budget's bounds nor a neuron cache (a model in memory).
  const json status = BodyOf(Call(p->http_port(), "GET", "/admin/v1/status", kAdminKey));
  EXPECT_TRUE(status["memory"]["budget_bytes"].is_null()) << status.dump();
  EXPECT_FALSE(status["memory"].contains("floor_bytes")) << status.dump();
  EXPECT_FALSE(status["sparse"].contains("neuron_cache")) << status.dump();
  {
    const adminpb::ServerStatus s = GrpcStatus(p->grpc_port());
    EXPECT_FALSE(s.memory().has_budget_bytes());
    EXPECT_FALSE(s.memory().has_ceiling_bytes());
    EXPECT_FALSE(s.memory().has_floor_bytes());
    EXPECT_FALSE(s.sparse().has_neuron_cache());
  }
  // The host app's onTrimMemory report gets the same answer.
  sparrow::v1::ReportMemoryPressureResponse out;
  const grpc::Status st = ReportTrim(p->grpc_port(), "TRIM_MEMORY_RUNNING_LOW", &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(st.error_message().find("memory_pressure 0"), std::string::npos) << st.error_message();
}

// The memory account is the process: what the consumers hold (the baseline measured at load,
// the model's pages read, the KV blocks, scratch buffers and cache records written) adds up to
// the process's RSS within max(16 MiB, 10%), as /admin/v1/memory, /metrics and `sparrowctl
// budget` report it and as this test reads it from /proc. (What the account leaves out: what the
// frontends' threads and libraries take after the baseline is measured at load, 11 MiB of 90.)
TEST(SparrowdAdminTest, TheMemoryAccountAgreesWithTheProcesssRss) {
  // Large enough that the weights, the cache and the KV pool are most of the process (bundles of
  // 64 MiB, half of them cached).
  const std::string converted = testing::WriteConvertedFlashSizedModel("admin-account");
  ASSERT_FALSE(converted.empty());
  Files f;
  auto p = Start(f, {"--cache-mb", "32", "--memory-pressure", "2"}, converted);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  for (int i = 0; i < 3; ++i) {
    const json b = BodyOf(Call(port, "POST", "/v1/completions", kApiKey,
                               json{{"prompt", "In the beginning " + std::to_string(i)},
                                    {"max_tokens", 48},
                                    {"temperature", 0},
                                    {"n", 2}}
                                   .dump()));
    ASSERT_TRUE(b.contains("choices")) << b.dump();
  }
  auto within = [](uint64_t held, int64_t rss, const std::string& where) {
    const double margin = std::max(16.0 * (1 << 20), 0.10 * static_cast<double>(rss));
    std::printf("%s: held %.1f MiB, RSS %.1f MiB\n", where.c_str(), held / 1048576.0,
                static_cast<double>(rss) / 1048576.0);
    EXPECT_NEAR(static_cast<double>(held), static_cast<double>(rss), margin)
        << where << ": held " << (held >> 20) << " MiB, RSS " << (rss >> 20) << " MiB";
  };
  const json m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  const int64_t rss = p->ResidentBytes();
  ASSERT_GT(rss, 0);
  const json& h = m["held"];
  uint64_t sum = 0;
  for (const char* k :
       {"process_bytes", "weights_bytes", "scratch_bytes", "kv_pool_bytes", "neuron_cache_bytes"}) {
    EXPECT_GT(h[k].get<uint64_t>(), 0u) << k << " in " << m.dump();
    sum += h[k].get<uint64_t>();
  }
  EXPECT_EQ(m["held_bytes"].get<uint64_t>(), sum);
  within(sum, rss, "/admin/v1/memory");
  within(m["rss_bytes"].get<uint64_t>(), rss, "/admin/v1/memory's own RSS");
  EXPECT_GT(h["neuron_cache_bytes"].get<uint64_t>(), 16u << 20) << "half the bundles, filled";

  const std::string metrics = Call(port, "GET", "/metrics", kApiKey);
  const std::string total = "sparrow_memory_held_bytes{consumer=\"total\"} ";
  const size_t at = metrics.find(total);
  ASSERT_NE(at, std::string::npos) << metrics;
  within(static_cast<uint64_t>(std::stod(metrics.substr(at + total.size()))), rss, "/metrics");
  EXPECT_NE(metrics.find("sparrow_process_resident_bytes "), std::string::npos);

  const json status = BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey));
  within(status["memory"]["held_bytes"].get<uint64_t>(), rss, "/admin/v1/status (the dashboard's)");

  const CtlRun ctl = Ctl(p->grpc_port(), f.Path("admin.keys"), "--json budget");
  ASSERT_EQ(ctl.exit_code, 0) << ctl.out;
  within(std::stoull(json::parse(ctl.out).value("held_bytes", "0")), rss, "sparrowctl");
  const CtlRun human = Ctl(p->grpc_port(), f.Path("admin.keys"), "budget");
  EXPECT_NE(human.out.find("of RSS"), std::string::npos) << human.out;
}

TEST(SparrowdAdminTest, TheOperatorMovesTheMemoryBudgetWhileServing) {
  const std::string src = testing::SharedDir() + "/pwri/models/pwri-bamboo-q4_0.gguf";
  if (!testing::FileExists(src)) GTEST_SKIP() << src << " is missing";
  const std::string converted = testing::ConvertedCopy(src, "admin-memory-bamboo");
  ASSERT_FALSE(converted.empty());
  Files f;
  SparrowdProcess::Options o;
  o.args = {"--model", converted, "--port", "0", "--grpc-port", "0", "--threads", "1",
            "--api-key-file", f.Path("api.keys"), "--admin-key-file", f.Path("admin.keys"),
            "--host-key-file", f.Path("host.keys"), "--audit-log", f.Path("audit.jsonl"),
            "--cache-mb", "2",
            // The operator alone moves the budget here: the machine's own pressure would make
            // the numbers below depend on what else runs on it.
            "--memory-pressure", "2"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  const int port = p->http_port();
  const std::string greedy =
      Request("POST", "/v1/completions", kApiKey,
              json{{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}}.dump());
  const std::string greedy_n2 =
      Request("POST", "/v1/completions", kApiKey,
              json{{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}, {"n", 2}}
                  .dump());
  auto complete = [&] {
    const json b = BodyOf(RawExchange("127.0.0.1", port, greedy));
    return b.contains("choices") ? b["choices"][0]["text"].get<std::string>()
                                 : "<failed: " + b.dump() + ">";
  };
  const std::string before = complete();

  json m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  EXPECT_EQ(m["consumers"]["neuron_cache_bytes"], 2u << 20) << m.dump();
  EXPECT_EQ(m["budget_bytes"], m["ceiling_bytes"]);
  const json& c = m["consumers"];
  EXPECT_EQ(m["budget_bytes"].get<uint64_t>(),
            c["process_bytes"].get<uint64_t>() + c["weights_bytes"].get<uint64_t>() +
                c["scratch_bytes"].get<uint64_t>() + c["kv_pool_bytes"].get<uint64_t>() +
                c["neuron_cache_bytes"].get<uint64_t>());
  EXPECT_GT(c["weights_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(c["process_bytes"].get<uint64_t>(), 0u) << "the process's own baseline counts";
  const uint64_t floor = m["floor_bytes"];
  EXPECT_LT(floor, m["ceiling_bytes"].get<uint64_t>());
  const int64_t kv_blocks = m["kv_pool"]["blocks"];
  EXPECT_TRUE(m["operator_budget_bytes"].is_null());
  EXPECT_EQ(m["pressure_level"], "none");
  EXPECT_TRUE(m["sources"].is_array());

  // The status has the neuron cache's occupancy and hit rate over the completion so far, and
  // the budget with its bounds (no operator's budget yet); gRPC the same.
  json status = BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey));
  {
    const json& nc = status["sparse"]["neuron_cache"];
    EXPECT_EQ(nc["capacity_bytes"], 2u << 20) << status.dump();
    EXPECT_GT(nc["resident_bytes"].get<int64_t>(), 0) << "the hot segment is preloaded";
    const int64_t lookups = nc["lookups"], hits = nc["hits"];
    EXPECT_GT(lookups, 0);
    EXPECT_GT(hits, 0);
    EXPECT_LE(hits, lookups);
    EXPECT_DOUBLE_EQ(nc["hit_rate"].get<double>(),
                     static_cast<double>(hits) / static_cast<double>(lookups));
    const json& sm = status["memory"];
    EXPECT_EQ(sm["budget_bytes"], m["budget_bytes"]) << status.dump();
    EXPECT_EQ(sm["ceiling_bytes"], m["ceiling_bytes"]);
    EXPECT_EQ(sm["floor_bytes"], floor);
    EXPECT_FALSE(sm.contains("operator_budget_bytes"));
    const adminpb::ServerStatus s = GrpcStatus(p->grpc_port());
    ASSERT_TRUE(s.sparse().has_neuron_cache());
    EXPECT_EQ(s.sparse().neuron_cache().capacity_bytes(), 2 << 20);
    EXPECT_GE(s.sparse().neuron_cache().lookups(), lookups);
    EXPECT_TRUE(s.sparse().neuron_cache().has_hit_rate());
    EXPECT_EQ(static_cast<uint64_t>(s.memory().floor_bytes()), floor);
    EXPECT_EQ(s.memory().ceiling_bytes(), m["ceiling_bytes"].get<int64_t>());
    EXPECT_FALSE(s.memory().has_operator_budget_bytes());
  }

  m = BodyOf(
      Call(port, "PUT", "/admin/v1/memory/budget", kAdminKey, json{{"bytes", floor}}.dump()));
  EXPECT_EQ(m["budget_bytes"], floor) << m.dump();
  EXPECT_EQ(m["operator_budget_bytes"], floor);
  EXPECT_EQ(m["consumers"]["neuron_cache_bytes"], 0);
  status = BodyOf(Call(port, "GET", "/admin/v1/status", kAdminKey));
  EXPECT_EQ(status["memory"]["operator_budget_bytes"], floor) << status.dump();
  EXPECT_EQ(status["memory"]["budget_bytes"], floor);
  const int64_t version = m["plan_version"];
  EXPECT_GE(version, 1);
  for (int i = 0; i < 400 && m["applied_plan_version"].get<int64_t>() < version; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey));
  }
  EXPECT_EQ(m["applied_plan_version"], version);
  EXPECT_EQ(m["neuron_cache"]["capacity_bytes"], 0);
  EXPECT_EQ(m["neuron_cache"]["resident_bytes"], 0) << "the cache's memory went back";
  EXPECT_LT(m["kv_pool"]["blocks"].get<int64_t>(), kv_blocks) << "one context of KV";
  EXPECT_EQ(complete(), before) << "every neuron from flash, the same completion";
  const std::string metrics = RawExchange("127.0.0.1", port, Request("GET", "/metrics", kApiKey));
  EXPECT_NE(metrics.find("sparrow_memory_budget_bytes{consumer=\"neuron_cache\"} 0"),
            std::string::npos);

  for (const char* bad : {R"({"bytes": -5})", R"({"bytes": "lots"})", "[1]", "not json"}) {
    const std::string r = Call(port, "PUT", "/admin/v1/memory/budget", kAdminKey, bad);
    EXPECT_EQ(StatusOf(r), 400) << bad;
    EXPECT_EQ(BodyOf(r)["error"]["param"], "bytes") << bad;
  }
  // A budget under the floor is refused naming the floor; the operator's budget stays.
  {
    const std::string r =
        Call(port, "PUT", "/admin/v1/memory/budget", kAdminKey, json{{"bytes", floor - 1}}.dump());
    EXPECT_EQ(StatusOf(r), 400) << r;
    EXPECT_EQ(BodyOf(r)["error"]["param"], "bytes");
    EXPECT_NE(BodyOf(r)["error"]["message"].get<std::string>().find(
                  "under this model's floor of " + std::to_string(floor) + " bytes"),
              std::string::npos)
        << r;
    EXPECT_EQ(BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey))["operator_budget_bytes"],
              floor);
  }
  m = BodyOf(Call(port, "DELETE", "/admin/v1/memory/budget", kAdminKey));
  EXPECT_TRUE(m["operator_budget_bytes"].is_null()) << m.dump();
  m = BodyOf(Call(port, "POST", "/admin/v1/memory/replan", kAdminKey));
  EXPECT_GT(m["plan_version"].get<int64_t>(), version) << m.dump();
  EXPECT_EQ(complete(), before);

  // The same from sparrowctl: budget [get|set SIZE|clear|replan] (proto JSON: 64-bit as strings).
  {
    const std::string keys = f.Path("admin.keys");
    const int g = p->grpc_port();
    CtlRun set = Ctl(g, keys, "--json budget set " + std::to_string(floor));
    ASSERT_EQ(set.exit_code, 0) << set.out;
    EXPECT_EQ(json::parse(set.out)["operator_budget_bytes"], std::to_string(floor)) << set.out;
    CtlRun shown = Ctl(g, keys, "budget");
    EXPECT_EQ(shown.exit_code, 0) << shown.out;
    EXPECT_NE(shown.out.find("operator " + std::to_string(floor >> 20)), std::string::npos)
        << shown.out;
    EXPECT_NE(shown.out.find("KV pool"), std::string::npos) << shown.out;
    CtlRun under = Ctl(g, keys, "budget set " + std::to_string(floor - 1));
    EXPECT_EQ(under.exit_code, 1) << under.out;
    EXPECT_NE(under.out.find("floor"), std::string::npos) << under.out;
    CtlRun bad = Ctl(g, keys, "budget set lots");
    EXPECT_EQ(bad.exit_code, 2) << bad.out;
    EXPECT_NE(bad.out.find("'lots' is not a size"), std::string::npos) << bad.out;
    CtlRun cleared = Ctl(g, keys, "--json budget clear");
    ASSERT_EQ(cleared.exit_code, 0) << cleared.out;
    EXPECT_FALSE(json::parse(cleared.out).contains("operator_budget_bytes")) << cleared.out;
    CtlRun replanned = Ctl(g, keys, "--json budget replan");
    ASSERT_EQ(replanned.exit_code, 0) << replanned.out;
    EXPECT_GT(std::stoll(json::parse(replanned.out).value("plan_version", "0")),
              m["plan_version"].get<int64_t>())
        << replanned.out;
  }

  // The same over gRPC, and the host app's onTrimMemory through the inference service.
  auto stub = AdminStub(p->grpc_port());
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::SetMemoryBudgetRequest req;
    req.set_bytes(floor + (1 << 20));  // the floor and 1 MiB of neurons
    adminpb::MemoryBudget out;
    ASSERT_TRUE(stub->SetMemoryBudget(&c, req, &out).ok());
    EXPECT_EQ(out.budget_bytes(), floor + (1 << 20));
    EXPECT_EQ(out.operator_budget_bytes(), floor + (1 << 20));
    EXPECT_EQ(out.consumers().neuron_cache_bytes(), 1u << 20);
  }
  {
    grpc::ClientContext c;
    WithKey(&c, kApiKey);
    adminpb::MemoryBudget out;
    EXPECT_EQ(stub->GetMemory(&c, adminpb::GetMemoryRequest(), &out).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  auto app = sparrow::v1::Sparrow::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(p->grpc_port()), grpc::InsecureChannelCredentials()));
  {
    sparrow::v1::ReportMemoryPressureResponse out;
    ASSERT_TRUE(ReportTrim(p->grpc_port(), "TRIM_MEMORY_RUNNING_LOW", &out).ok());
    EXPECT_EQ(out.pressure_level(), "medium");
    EXPECT_LT(out.budget_bytes(), floor + (1 << 20)) << "medium shrinks";
    EXPECT_GE(out.budget_bytes(), floor);
  }
  {
    sparrow::v1::ReportMemoryPressureResponse out;
    const grpc::Status st = ReportTrim(p->grpc_port(), "SOMETIMES", &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("SOMETIMES"), std::string::npos);
  }
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::MemoryBudget out;
    ASSERT_TRUE(stub->GetMemory(&c, adminpb::GetMemoryRequest(), &out).ok());
    EXPECT_EQ(out.pressure_level(), "medium");
    EXPECT_LT(out.consumers().neuron_cache_bytes(), 1u << 20);
  }
  {
    grpc::ClientContext c;
    WithKey(&c, kAdminKey);
    adminpb::MemoryBudget out;
    ASSERT_TRUE(stub->Replan(&c, adminpb::ReplanRequest(), &out).ok());
    EXPECT_GT(out.plan_version(), version + 1);
  }
  EXPECT_EQ(complete(), before);
  // The app is next to be killed: the cache goes to its floor and, the device still critical,
  // the floor serves one single-choice request at a time: more is refused with 503 until the
  // pressure eases.
  {
    grpc::ClientContext c;
    WithKey(&c, kHostKey);
    sparrow::v1::ReportMemoryPressureRequest req;
    req.set_trim_level_value(80);  // TRIM_MEMORY_COMPLETE
    sparrow::v1::ReportMemoryPressureResponse out;
    ASSERT_TRUE(app->ReportMemoryPressure(&c, req, &out).ok());
    EXPECT_EQ(out.pressure_level(), "critical");
    EXPECT_EQ(out.budget_bytes(), floor);
  }
  EXPECT_TRUE(BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey))["starved"].get<bool>());
  EXPECT_EQ(complete(), before) << "one request fits the floor";
  const std::string refused = RawExchange("127.0.0.1", port, greedy_n2);
  EXPECT_EQ(StatusOf(refused), 503);
  EXPECT_EQ(BodyOf(refused)["error"]["code"], "memory_pressure");
  EXPECT_NE(BodyOf(refused)["error"]["message"].get<std::string>().find(
                "at its floor of " + std::to_string(floor >> 20) + " MiB"),
            std::string::npos)
      << refused;
  EXPECT_EQ(Header(refused, "Retry-After"), "1");
  EXPECT_TRUE(BodyOf(Call(port, "GET", "/admin/v1/memory", kAdminKey))["starved"].get<bool>());
  const std::string audit = f.Read("audit.jsonl");
  EXPECT_NE(audit.find("memory_budget_set"), std::string::npos);
  EXPECT_NE(audit.find("memory_replan"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
