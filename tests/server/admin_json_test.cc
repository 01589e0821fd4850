#include "server/http/admin_json.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

using json = nlohmann::json;
namespace adminpb = ::sparrow::admin::v1;

// A dense model without memory control: no cache row and no budget bounds, rather than zeros an
// operator would take for real numbers (budget_bytes stays, null, as the route always sent it).
TEST(AdminJsonTest, NoNeuronCacheAndNoGovernorLeaveTheirFieldsOut) {
  adminpb::ServerStatus s;
  s.mutable_sparse()->set_mode("dense");
  s.mutable_sparse()->set_active_fraction(1.0);
  s.mutable_memory()->set_rss_bytes(12345);
  const json j = AdminJson(s);
  EXPECT_EQ(j["sparse"], (json{{"mode", "dense"}, {"active_fraction", 1.0}}));
  EXPECT_EQ(j["memory"], (json{{"rss_bytes", 12345}, {"budget_bytes", nullptr}})) << j.dump();
  EXPECT_EQ(j["sparse"].dump(), R"({"active_fraction":1.0,"mode":"dense"})");
}

// With a memory governor: the budget, its ceiling and floor, and the operator's budget only
// while one is set.
TEST(AdminJsonTest, AGovernorAddsTheBudgetItsBoundsAndTheOperatorsBudget) {
  adminpb::MemoryStatus m;
  m.set_budget_bytes(300);
  m.set_ceiling_bytes(400);
  m.set_floor_bytes(100);
  json j = AdminJson(m);
  EXPECT_EQ(j["budget_bytes"], 300);
  EXPECT_EQ(j["ceiling_bytes"], 400);
  EXPECT_EQ(j["floor_bytes"], 100);
  EXPECT_FALSE(j.contains("operator_budget_bytes")) << j.dump();
  m.set_operator_budget_bytes(300);
  EXPECT_EQ(AdminJson(m)["operator_budget_bytes"], 300);
}

// proto3's JSON writes 64-bit integers as strings; the routes send numbers, map values and
// repeated messages included, every zero field present.
TEST(AdminJsonTest, SixtyFourBitIntegersAreNumbersAtEveryDepth) {
  adminpb::ServerStatus s;
  (*s.mutable_model()->mutable_tensor_types())["q8_0"] = 7;
  s.mutable_model()->set_file_bytes(int64_t{5} << 40);
  s.add_requests()->set_max_tokens(1500);
  s.mutable_kv();
  const json j = AdminJson(s);
  EXPECT_EQ(j["model"]["tensor_types"]["q8_0"], 7) << j.dump();
  EXPECT_EQ(j["model"]["file_bytes"], int64_t{5} << 40);
  EXPECT_EQ(j["requests"][0]["max_tokens"], 1500);
  EXPECT_FALSE(j["requests"][0].contains("prompt")) << "unset optional fields stay out";
  EXPECT_EQ(j["kv"]["blocks_total"], 0);
  EXPECT_EQ(j["running"], 0);
  EXPECT_EQ(j["requests"][0]["stream"], false);
  EXPECT_TRUE(j["model"]["architecture"].is_string());
  EXPECT_FALSE(j.contains("throughput")) << "a part not filled in is not invented";
}

// The memory answer: unsigned bytes as numbers, the operator's budget and the plan null while
// there are none.
TEST(AdminJsonTest, TheMemoryAnswerHasNullsWhereItAlwaysHad) {
  adminpb::MemoryBudget m;
  m.set_budget_bytes(uint64_t{1} << 63);
  m.add_sources("psi");
  json j = AdminJson(m);
  EXPECT_EQ(j["budget_bytes"].get<uint64_t>(), uint64_t{1} << 63);
  EXPECT_TRUE(j.at("operator_budget_bytes").is_null()) << j.dump();
  EXPECT_TRUE(j.at("plan").is_null());
  EXPECT_FALSE(j.contains("sparsity"));
  EXPECT_EQ(j["sources"], json::array({"psi"}));
  m.mutable_plan()->set_threads(2);
  m.mutable_plan()->set_memory_bytes(99);
  j = AdminJson(m);
  EXPECT_EQ(j["plan"]["threads"], 2);
  EXPECT_EQ(j["plan"]["memory_bytes"], 99);
}

// An action's arguments go out as the object they are, not as the proto's text of it.
TEST(AdminJsonTest, AnActionEventCarriesItsArgumentsAsAnObject) {
  adminpb::ActionEvent a;
  a.set_action("cancel");
  a.set_args_json(R"({"id":"req-3"})");
  a.set_result("ok");
  const json j = ActionEventJson(a);
  EXPECT_EQ(j["args"], (json{{"id", "req-3"}}));
  EXPECT_FALSE(j.contains("args_json"));
  EXPECT_EQ(j["action"], "cancel");
  EXPECT_EQ(j["detail"], "");
}

}  // namespace
}  // namespace sparrow::server
