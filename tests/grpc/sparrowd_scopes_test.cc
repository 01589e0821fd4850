// Keys and scopes, cell by cell: the table in server/README.md ("Keys and scopes") is read and
// every route in it, HTTP and gRPC, is called on a real sparrowd on loopback with no key, an
// inference key, a host key and an admin key; each answer must be the cell's. The README and
// the calls below must name the same routes, so a route added to one and not the other fails.
// Also the finding that made the host scope: an inference key cannot starve the server through
// ReportMemoryPressure.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "health_wire.grpc.pb.h"
#include "reflection_wire.pb.h"
#include "sparrow/admin/v1/admin.grpc.pb.h"
#include "sparrow/v1/sparrow.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;
namespace adminpb = sparrow::admin::v1;
namespace v1 = sparrow::v1;
namespace refl = sparrow::testing::reflection;

constexpr const char* kApiKey = "inference-key-1";
constexpr const char* kHostKey = "host-app-key-0123456789";
constexpr const char* kAdminKey = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

// The key files of the three scopes and a model directory (reload enabled), under the test's
// temporary directory (removed when the test process exits).
struct Scratch {
  std::string dir = testing::TempPath("scopes");
  Scratch() {
    std::filesystem::create_directories(dir + "/models");
    std::filesystem::create_symlink(testing::ModelPath("stories260K.gguf"),
                                    dir + "/models/stories260K.gguf");
    for (const auto& [file, line] : {std::pair{"api.keys", std::string(kApiKey)},
                                     std::pair{"host.keys", "app " + std::string(kHostKey)},
                                     std::pair{"admin.keys", "ops " + std::string(kAdminKey)}}) {
      std::ofstream(Path(file)) << line << "\n";
      std::filesystem::permissions(
          Path(file), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    }
  }
  std::string Path(const std::string& name) const { return dir + "/" + name; }
};

// The README's table: route -> the four cells (no key, inference, host, admin).
std::map<std::string, std::vector<std::string>> ReadmeTable() {
  std::ifstream in(std::string(SPARROW_SOURCE_DIR) + "/server/README.md");
  std::map<std::string, std::vector<std::string>> rows;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "<!-- scopes table: begin -->") inside = true;
    if (line == "<!-- scopes table: end -->") break;
    if (!inside || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      if (a != std::string::npos) cells.push_back(cell.substr(a, b - a + 1));
    }
    if (cells.size() != 6) {
      ADD_FAILURE() << "server/README.md scopes row without 6 cells: " << line;
      continue;
    }
    const std::string route = cells[0].substr(1, cells[0].size() - 2);  // without backticks
    rows[route] = {cells[2], cells[3], cells[4], cells[5]};
  }
  return rows;
}

// An HTTP exchange: the status and, for a JSON error, its code. Reads the head and a
// Content-Length body only, so an event stream (which never ends) is not waited for.
struct HttpAnswer {
  int status = 0;
  std::string code;
};

HttpAnswer Http(int port, const std::string& method, const std::string& path,
                const std::string& key, const std::string& body = "") {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  if (!body.empty()) {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  r += "\r\n" + body;
  const int fd = testing::ConnectTcp("127.0.0.1", port);
  if (fd < 0) return {};
  testing::SendAll(fd, r);
  std::string got;
  char buf[4096];
  size_t head_end = std::string::npos, want = std::string::npos;
  while (want == std::string::npos || got.size() < want) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = got.find("\r\n\r\n")) != std::string::npos) {
      const size_t at = got.find("\r\nContent-Length: ");
      if (at == std::string::npos || at > head_end) break;  // a stream: the head is enough
      want = head_end + 4 + std::stoul(got.substr(at + 18));
    }
  }
  ::close(fd);
  HttpAnswer a;
  a.status = testing::StatusOf(got);
  if (head_end != std::string::npos) {
    const json j = json::parse(got.substr(head_end + 4), nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("code") && j["error"]["code"].is_string()) {
      a.code = j["error"]["code"];
    }
  }
  return a;
}

void WithKey(grpc::ClientContext* c, const std::string& key) {
  if (!key.empty()) c->AddMetadata("authorization", "Bearer " + key);
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
}

template <class Stub, class Req, class Resp>
grpc::Status Unary(Stub* stub,
                   grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                   const std::string& key, const Req& req = Req()) {
  grpc::ClientContext c;
  WithKey(&c, key);
  Resp resp;
  return (stub->*method)(&c, req, &resp);
}

// A unary call with the request `req` as a row of the table.
template <class Stub, class Req, class Resp>
std::function<grpc::Status(const std::string&)> Rpc(
    std::shared_ptr<Stub> stub,
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), Req req = Req()) {
  return
      [stub, method, req](const std::string& key) { return Unary(stub.get(), method, key, req); };
}

// A server-streaming call: the first message (if any), then cancelled; its final status.
template <class Resp>
grpc::Status FirstOfStream(grpc::ClientContext& c, grpc::ClientReader<Resp>* reader) {
  Resp r;
  if (reader->Read(&r)) c.TryCancel();
  while (reader->Read(&r)) {
  }
  const grpc::Status st = reader->Finish();
  // Cancelled after a message: the call was admitted.
  return st.error_code() == grpc::StatusCode::CANCELLED ? grpc::Status::OK : st;
}

class Calls {
 public:
  using HttpCall = std::function<HttpAnswer(const std::string& key)>;
  using GrpcCall = std::function<grpc::Status(const std::string& key)>;
  std::map<std::string, HttpCall> http;
  std::map<std::string, GrpcCall> grpc;

  Calls(int port, std::shared_ptr<grpc::Channel> channel) {
    auto get = [port](std::string path) {
      return [port, path](const std::string& key) { return Http(port, "GET", path, key); };
    };
    auto send = [port](std::string method, std::string path, std::string body) {
      return [=](const std::string& key) { return Http(port, method, path, key, body); };
    };
    http["GET /health"] = get("/health");
    http["GET /ready"] = get("/ready");
    http["GET /dashboard"] = get("/dashboard");
    http["GET /dashboard/"] = get("/dashboard/");
    http["GET /dashboard/{file}"] = get("/dashboard/dashboard.js");
    http["GET /metrics"] = get("/metrics");
    http["GET /v1/models"] = get("/v1/models");
    http["GET /v1/models/{id}"] = get("/v1/models/stories260K");
    http["POST /v1/completions"] =
        send("POST", "/v1/completions", R"({"prompt":"Once","max_tokens":1})");
    http["POST /v1/chat/completions"] =
        send("POST", "/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":1})");
    http["POST /v1/embeddings"] = send("POST", "/v1/embeddings", R"({"input":"Once"})");
    // stories260K has no classification head: past the key check, a 400 saying so.
    http["POST /v1/rerank"] =
        send("POST", "/v1/rerank", R"({"query":"Once","documents":["upon"]})");
    // Ollama's API: GET / and /api/version open (Open WebUI probes them), the rest inference.
    http["GET /"] = get("/");
    http["GET /api/version"] = get("/api/version");
    http["POST /api/chat"] =
        send("POST", "/api/chat",
             R"({"model":"stories260K","messages":[{"role":"user","content":"Hi"}],)"
             R"("stream":false,"options":{"num_predict":1}})");
    http["POST /api/generate"] = send(
        "POST", "/api/generate",
        R"({"model":"stories260K","prompt":"Once","stream":false,"options":{"num_predict":1}})");
    http["POST /api/embed"] =
        send("POST", "/api/embed", R"({"model":"stories260K","input":"Once"})");
    http["POST /api/embeddings"] =
        send("POST", "/api/embeddings", R"({"model":"stories260K","prompt":"Once"})");
    http["POST /api/show"] = send("POST", "/api/show", R"({"model":"stories260K"})");
    http["GET /api/tags"] = get("/api/tags");
    http["GET /api/ps"] = get("/api/ps");
    http["GET {any other path}"] = get("/no-such-route");
    http["GET /admin/v1/status"] = get("/admin/v1/status");
    http["GET /admin/v1/requests"] = get("/admin/v1/requests");
    http["DELETE /admin/v1/requests/{id}"] = send("DELETE", "/admin/v1/requests/req-999", "");
    http["POST /admin/v1/drain"] = [port](const std::string& key) {
      const HttpAnswer a = Http(port, "POST", "/admin/v1/drain", key, "{}");
      if (a.status == 200) Http(port, "POST", "/admin/v1/resume", key, "{}");  // the rest runs
      return a;
    };
    http["POST /admin/v1/resume"] = send("POST", "/admin/v1/resume", "{}");
    http["PUT /admin/v1/log-level"] = send("PUT", "/admin/v1/log-level", R"({"level":"info"})");
    http["POST /admin/v1/reload"] = send("POST", "/admin/v1/reload", R"({"model":"no-such"})");
    http["GET /admin/v1/models"] = get("/admin/v1/models");
    http["GET /admin/v1/events"] = get("/admin/v1/events");
    http["GET /admin/v1/memory"] = get("/admin/v1/memory");
    http["GET /admin/v1/shards"] = get("/admin/v1/shards");
    // Below any floor: refused past the key check, nothing changes.
    http["PUT /admin/v1/memory/budget"] = send("PUT", "/admin/v1/memory/budget", R"({"bytes":1})");
    http["DELETE /admin/v1/memory/budget"] = send("DELETE", "/admin/v1/memory/budget", "");
    http["POST /admin/v1/memory/replan"] = send("POST", "/admin/v1/memory/replan", "{}");
    http["GET /admin/{any other path}"] = get("/admin/v1/no-such-route");

    std::shared_ptr<v1::Sparrow::Stub> app = v1::Sparrow::NewStub(channel);
    std::shared_ptr<adminpb::Admin::Stub> admin = adminpb::Admin::NewStub(channel);
    std::shared_ptr<grpc::health::v1::Health::Stub> health =
        grpc::health::v1::Health::NewStub(channel);
    grpc["grpc.health.v1.Health/Check"] = Rpc(health, &grpc::health::v1::Health::Stub::Check);
    grpc["grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"] = [channel](
                                                                                const std::string&
                                                                                    key) {
      // By path: libgrpc++_reflection registers the real message types.
      const grpc::internal::RpcMethod method(
          "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
          grpc::internal::RpcMethod::BIDI_STREAMING);
      grpc::ClientContext c;
      WithKey(&c, key);
      auto stream = std::unique_ptr<
          grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>(
          grpc::internal::ClientReaderWriterFactory<
              refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(channel.get(),
                                                                                     method, &c));
      refl::ServerReflectionRequest req;
      req.set_list_services("*");
      stream->Write(req);
      stream->WritesDone();
      refl::ServerReflectionResponse res;
      while (stream->Read(&res)) {
      }
      return stream->Finish();
    };
    grpc["sparrow.v1.Sparrow/Generate"] = [app](const std::string& key) {
      grpc::ClientContext c;
      WithKey(&c, key);
      v1::GenerateRequest req;
      req.set_prompt("Once");
      req.mutable_options()->set_max_tokens(1);
      auto reader = app->Generate(&c, req);
      return FirstOfStream(c, reader.get());
    };
    grpc["sparrow.v1.Sparrow/Chat"] = [app](const std::string& key) {
      grpc::ClientContext c;
      WithKey(&c, key);
      v1::ChatRequest req;
      auto* m = req.add_messages();
      m->set_role("user");
      m->set_content("Hi");
      req.mutable_options()->set_max_tokens(1);
      auto reader = app->Chat(&c, req);
      return FirstOfStream(c, reader.get());
    };
    {
      v1::TokenizeRequest req;
      req.set_text("Once");
      grpc["sparrow.v1.Sparrow/Tokenize"] = Rpc(app, &v1::Sparrow::Stub::Tokenize, req);
    }
    {
      v1::DetokenizeRequest req;
      req.add_tokens(1);
      grpc["sparrow.v1.Sparrow/Detokenize"] = Rpc(app, &v1::Sparrow::Stub::Detokenize, req);
    }
    grpc["sparrow.v1.Sparrow/ListModels"] = Rpc(app, &v1::Sparrow::Stub::ListModels);
    {
      v1::EmbedRequest req;
      req.add_texts("Once");
      grpc["sparrow.v1.Sparrow/Embed"] = Rpc(app, &v1::Sparrow::Stub::Embed, req);
    }
    {
      v1::RerankRequest req;  // past the key check: INVALID_ARGUMENT, stories260K has no head
      req.set_query("Once");
      req.add_documents("upon");
      grpc["sparrow.v1.Sparrow/Rerank"] = Rpc(app, &v1::Sparrow::Stub::Rerank, req);
    }
    {
      v1::ReportMemoryPressureRequest req;
      req.set_trim_level("NOT_A_LEVEL");  // past the key check it is refused: nothing changes
      grpc["sparrow.v1.Sparrow/ReportMemoryPressure"] =
          Rpc(app, &v1::Sparrow::Stub::ReportMemoryPressure, req);
    }
    using A = adminpb::Admin::Stub;
    grpc["sparrow.admin.v1.Admin/GetStatus"] = Rpc(admin, &A::GetStatus);
    grpc["sparrow.admin.v1.Admin/ListRequests"] = Rpc(admin, &A::ListRequests);
    {
      adminpb::CancelRequestRequest req;
      req.set_id("req-999");
      grpc["sparrow.admin.v1.Admin/CancelRequest"] = Rpc(admin, &A::CancelRequest, req);
    }
    grpc["sparrow.admin.v1.Admin/Drain"] = [admin](const std::string& key) {
      grpc::Status st = Unary(admin.get(), &A::Drain, key);
      if (st.ok()) Unary(admin.get(), &A::Resume, key);  // the rest of the table still runs
      return st;
    };
    grpc["sparrow.admin.v1.Admin/Resume"] = Rpc(admin, &A::Resume);
    {
      adminpb::SetLogLevelRequest req;
      req.set_level("info");
      grpc["sparrow.admin.v1.Admin/SetLogLevel"] = Rpc(admin, &A::SetLogLevel, req);
    }
    {
      adminpb::ReloadRequest req;
      req.set_model("no-such");
      grpc["sparrow.admin.v1.Admin/Reload"] = Rpc(admin, &A::Reload, req);
    }
    grpc["sparrow.admin.v1.Admin/ListModels"] = Rpc(admin, &A::ListModels);
    grpc["sparrow.admin.v1.Admin/WatchEvents"] = [admin](const std::string& key) {
      grpc::ClientContext c;
      WithKey(&c, key);
      auto reader = admin->WatchEvents(&c, {});
      return FirstOfStream(c, reader.get());
    };
    grpc["sparrow.admin.v1.Admin/GetMemory"] = Rpc(admin, &A::GetMemory);
    {
      adminpb::SetMemoryBudgetRequest req;
      req.set_bytes(1);  // below any floor
      grpc["sparrow.admin.v1.Admin/SetMemoryBudget"] = Rpc(admin, &A::SetMemoryBudget, req);
    }
    grpc["sparrow.admin.v1.Admin/ClearMemoryBudget"] = Rpc(admin, &A::ClearMemoryBudget);
    grpc["sparrow.admin.v1.Admin/Replan"] = Rpc(admin, &A::Replan);
    grpc["sparrow.admin.v1.Admin/GetShards"] = Rpc(admin, &A::GetShards);
  }
};

// The codes the key check itself answers with; any other answer is the route's own.
bool RefusedByKeyCheck(const HttpAnswer& a) {
  return a.status == 401 || a.status == 429 ||
         (a.status == 403 && (a.code == "insufficient_scope" || a.code == "admin_disabled" ||
                              a.code == "host_disabled"));
}

bool RefusedByKeyCheck(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

const grpc::StatusCode* GrpcCodeNamed(const std::string& name) {
  static const std::map<std::string, grpc::StatusCode> codes = {
      {"UNAUTHENTICATED", grpc::StatusCode::UNAUTHENTICATED},
      {"PERMISSION_DENIED", grpc::StatusCode::PERMISSION_DENIED}};
  auto it = codes.find(name);
  return it == codes.end() ? nullptr : &it->second;
}

std::unique_ptr<SparrowdProcess> Start(const Scratch& s, std::vector<std::string> keys) {
  SparrowdProcess::Options o;
  o.args = {"--model", testing::ModelPath("stories260K.gguf"), "--port", "0", "--grpc-port", "0",
            "--threads", "1", "--model-dir", s.Path("models"),
            // Every denied cell is a failed key check: no lockout in the middle of the table.
            "--auth-failure-limit", "0"};
  o.args.insert(o.args.end(), keys.begin(), keys.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

TEST(SparrowdScopesTest, EveryRouteAnswersEachKeyAsTheReadmeTableSays) {
  const auto table = ReadmeTable();
  ASSERT_GE(table.size(), 40u) << "the scopes table of server/README.md was not found";
  Scratch s;
  auto p = Start(s, {"--api-key-file", s.Path("api.keys"), "--host-key-file", s.Path("host.keys"),
                     "--admin-key-file", s.Path("admin.keys")});
  ASSERT_NE(p, nullptr);
  Calls calls(p->http_port(), grpc::CreateChannel("127.0.0.1:" + std::to_string(p->grpc_port()),
                                                  grpc::InsecureChannelCredentials()));
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"no key", ""}, {"inference key", kApiKey}, {"host key", kHostKey}, {"admin key", kAdminKey}};
  size_t checked = 0;
  for (const auto& [route, cells] : table) {
    const bool is_http = calls.http.count(route) != 0, is_grpc = calls.grpc.count(route) != 0;
    if (!is_http && !is_grpc) {
      ADD_FAILURE() << "server/README.md lists '" << route << "', which this test does not call";
      continue;
    }
    for (size_t k = 0; k < keys.size(); ++k) {
      SCOPED_TRACE(route + " with " + keys[k].first + ", README says " + cells[k]);
      const std::string& want = cells[k];
      if (is_http) {
        const HttpAnswer a = calls.http[route](keys[k].second);
        ASSERT_NE(a.status, 0) << "no answer";
        if (want == "✓") {
          EXPECT_FALSE(RefusedByKeyCheck(a)) << a.status << " " << a.code;
        } else {
          EXPECT_EQ(std::to_string(a.status), want) << a.code;
          EXPECT_EQ(a.code, want == "401" ? "invalid_api_key" : "insufficient_scope");
        }
      } else {
        const grpc::Status st = calls.grpc[route](keys[k].second);
        if (want == "✓") {
          EXPECT_FALSE(RefusedByKeyCheck(st)) << st.error_code() << " " << st.error_message();
        } else {
          const grpc::StatusCode* code = GrpcCodeNamed(want);
          ASSERT_NE(code, nullptr) << "not a gRPC code the table may use";
          EXPECT_EQ(st.error_code(), *code) << st.error_message();
        }
      }
      ++checked;
    }
  }
  for (const auto& [route, call] : calls.http) {
    EXPECT_TRUE(table.count(route)) << "'" << route << "' is missing from server/README.md";
  }
  for (const auto& [route, call] : calls.grpc) {
    EXPECT_TRUE(table.count(route)) << "'" << route << "' is missing from server/README.md";
  }
  EXPECT_EQ(checked, 4 * (calls.http.size() + calls.grpc.size()));
}

// The finding: RUNNING_CRITICAL from an inference key put the budget at its floor, so new
// requests got 503 and /ready went false and a balancer took the replica out. Started with the
// flags the server had before host keys (inference and admin keys), so the same test shows the
// old behaviour against an old binary (SPARROWD_UNDER_TEST).
TEST(SparrowdScopesTest, AnInferenceKeyCannotStarveTheServer) {
  Scratch s;
  auto p =
      Start(s, {"--api-key-file", s.Path("api.keys"), "--admin-key-file", s.Path("admin.keys")});
  ASSERT_NE(p, nullptr);
  auto app = v1::Sparrow::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(p->grpc_port()),
                                                      grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 3; ++i) {
    v1::ReportMemoryPressureRequest req;
    req.set_trim_level("RUNNING_CRITICAL");
    const grpc::Status st =
        Unary(app.get(), &v1::Sparrow::Stub::ReportMemoryPressure, kApiKey, req);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
    EXPECT_NE(st.error_message().find("inference API key"), std::string::npos)
        << st.error_message();
  }
  EXPECT_EQ(Http(p->http_port(), "GET", "/ready", "").status, 200);
  EXPECT_EQ(Http(p->http_port(), "POST", "/v1/completions", kApiKey,
                 R"({"prompt":"Once","max_tokens":1})")
                .status,
            200);
  // Without a host key, the admin key still reaches memory reports (the host app's fallback).
  v1::ReportMemoryPressureRequest req;
  req.set_trim_level("RUNNING_MODERATE");
  const grpc::Status st =
      Unary(app.get(), &v1::Sparrow::Stub::ReportMemoryPressure, kAdminKey, req);
  EXPECT_FALSE(RefusedByKeyCheck(st)) << st.error_message();
}

}  // namespace
}  // namespace sparrow
