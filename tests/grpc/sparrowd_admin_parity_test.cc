// The admin API's two frontends agree: on a real sparrowd on loopback, each HTTP answer under
// /admin/v1/ is parsed strictly into its admin.proto message (a key the proto lacks fails) and
// compared field by field with the gRPC answer to the same question, less the fields that move
// between two calls (uptime, RSS, rates); and every field the message always has is in the JSON.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "sparrow/admin/v1/admin.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using testing::SparrowdProcess;
namespace adminpb = sparrow::admin::v1;

constexpr const char* kAdminKey = "a1b2c3d4e5f60718293a4b5c6d7e8f90";

struct Server {
  std::unique_ptr<SparrowdProcess> process;
  std::unique_ptr<adminpb::Admin::Stub> stub;

  explicit Server(std::vector<std::string> extra = {}) {
    SparrowdProcess::Options o;
    o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
              "--port",      "0",
              "--grpc-port", "0",
              "--threads",   "1",
              "--admin-key", kAdminKey};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    std::string error;
    process = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
    EXPECT_NE(process, nullptr) << error;
    if (!process) return;
    stub = adminpb::Admin::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(process->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  // The raw response of one HTTP request with the admin key.
  std::string Http(const std::string& method, const std::string& path,
                   const std::string& body = "") const {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                    "Authorization: Bearer " + kAdminKey + "\r\n";
    if (!body.empty()) {
      r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n";
    }
    return testing::RawExchange("127.0.0.1", process->http_port(), r + "\r\n" + body);
  }

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("authorization", std::string("Bearer ") + kAdminKey);
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return c;
  }
};

json BodyOf(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return json::parse(at == std::string::npos ? "" : raw.substr(at + 4), nullptr, false);
}

// Every field without presence is a key of `j`, and every set message field too, at each depth:
// the HTTP answer leaves out nothing the gRPC one has.
void ExpectEveryField(const Message& m, const json& j, const std::string& path) {
  ASSERT_TRUE(j.is_object()) << path << ": " << j.dump();
  const Descriptor* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string at = path + "." + f->name();
    const bool set = f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
    if (f->has_presence() && !set) continue;
    ASSERT_TRUE(j.contains(f->name())) << at << " is missing from " << j.dump();
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) continue;
    if (f->is_repeated()) {
      for (int k = 0; k < r->FieldSize(m, f); ++k) {
        ExpectEveryField(r->GetRepeatedMessage(m, f, k), j[f->name()][k], at);
      }
    } else {
      ExpectEveryField(r->GetMessage(m, f), j[f->name()], at);
    }
  }
}

// `http` (a JSON body) as the message `grpc` is, compared with it but for `moving` (fields that
// change between the two calls).
void ExpectSame(const json& http, const Message& grpc,
                const std::vector<const FieldDescriptor*>& moving = {}) {
  ExpectEveryField(grpc, http, grpc.GetDescriptor()->name());
  std::unique_ptr<Message> parsed(grpc.New());
  google::protobuf::util::JsonParseOptions strict;
  strict.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(http.dump(), parsed.get(), strict);
  ASSERT_TRUE(st.ok()) << st.message() << " in " << http.dump();
  google::protobuf::util::MessageDifferencer diff;
  for (const FieldDescriptor* f : moving) diff.IgnoreField(f);
  std::string report;
  diff.ReportDifferencesToString(&report);
  EXPECT_TRUE(diff.Compare(*parsed, grpc))
      << report << "HTTP: " << http.dump() << "\ngRPC: " << grpc.DebugString();
}

template <typename M>
const FieldDescriptor* Field(int number) {
  return M::descriptor()->FindFieldByNumber(number);
}

// Some traffic first, so that the counters, the latency and the KV blocks are not all zero.
// Two completions; returns the tokens they generated (their usage).
int64_t Generate(const Server& s) {
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 8})";
  const std::string r =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  int64_t generated = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string raw = testing::RawExchange("127.0.0.1", s.process->http_port(), r);
    EXPECT_EQ(testing::StatusOf(raw), 200);
    const json answer = BodyOf(raw);
    if (answer.is_object()) generated += answer["usage"].value("completion_tokens", int64_t{0});
  }
  return generated;
}

// One gRPC answer: `call(context, &response)` with the admin key; fails the test when refused.
template <typename Response, typename Call>
Response Grpc(const Server& s, Call call) {
  Response r;
  auto c = s.Context();
  const grpc::Status st = call(c.get(), &r);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return r;
}

TEST(SparrowdAdminParityTest, TheStatusIsTheSameOverHttpAndGrpc) {
  Server s;
  ASSERT_NE(s.process, nullptr);
  const int64_t generated = Generate(s);
  // A client has its last token before the scheduler's step that made it is counted: the
  // counters are compared once they have taken in both completions (a bounded wait).
  adminpb::ServerStatus grpc_status;
  for (int i = 0; i < 200; ++i) {
    grpc_status = Grpc<adminpb::ServerStatus>(
        s, [&](auto* c, auto* r) { return s.stub->GetStatus(c, {}, r); });
    if (grpc_status.throughput().generated_tokens() >= generated) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(grpc_status.throughput().generated_tokens(), generated);
  const json http = BodyOf(s.Http("GET", "/admin/v1/status"));
  EXPECT_GT(grpc_status.throughput().generated_tokens(), 0) << grpc_status.DebugString();
  EXPECT_FALSE(grpc_status.model().tensor_types().empty());
  ExpectSame(http, grpc_status,
             {Field<adminpb::ServerStatus>(adminpb::ServerStatus::kUptimeSFieldNumber),
              Field<adminpb::MemoryStatus>(adminpb::MemoryStatus::kRssBytesFieldNumber),
              Field<adminpb::MemoryStatus>(adminpb::MemoryStatus::kHeldBytesFieldNumber),
              Field<adminpb::Throughput>(adminpb::Throughput::kTokensPerS10SFieldNumber),
              Field<adminpb::Throughput>(adminpb::Throughput::kTokensPerS60SFieldNumber)});
}

TEST(SparrowdAdminParityTest, MemoryShardsRequestsAndDrainAreTheSameOverHttpAndGrpc) {
  Server s;
  ASSERT_NE(s.process, nullptr);
  Generate(s);
  ExpectSame(
      BodyOf(s.Http("GET", "/admin/v1/memory")),
      Grpc<adminpb::MemoryBudget>(s, [&](auto* c, auto* r) { return s.stub->GetMemory(c, {}, r); }),
      {Field<adminpb::MemoryBudget>(adminpb::MemoryBudget::kRssBytesFieldNumber),
       Field<adminpb::MemoryBudget>(adminpb::MemoryBudget::kHeldFieldNumber),
       Field<adminpb::MemoryBudget>(adminpb::MemoryBudget::kHeldBytesFieldNumber)});

  const auto grpc_shards =
      Grpc<adminpb::Shards>(s, [&](auto* c, auto* r) { return s.stub->GetShards(c, {}, r); });
  EXPECT_EQ(grpc_shards.placement_size(), 1);
  ExpectSame(BodyOf(s.Http("GET", "/admin/v1/shards")), grpc_shards);

  json requests = BodyOf(s.Http("GET", "/admin/v1/requests"));
  EXPECT_EQ(requests["object"], "list");  // the OpenAI-style list, HTTP's own
  requests.erase("object");
  ExpectSame(requests, Grpc<adminpb::ListRequestsResponse>(
                           s, [&](auto* c, auto* r) { return s.stub->ListRequests(c, {}, r); }));

  const auto grpc_drain =
      Grpc<adminpb::DrainResponse>(s, [&](auto* c, auto* r) { return s.stub->Drain(c, {}, r); });
  EXPECT_TRUE(grpc_drain.draining());
  ExpectSame(BodyOf(s.Http("POST", "/admin/v1/drain")), grpc_drain);
}

}  // namespace
}  // namespace sparrow
