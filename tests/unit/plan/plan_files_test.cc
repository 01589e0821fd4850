// The hardware profile and plan files: written, read back the same, and malformed ones refused
// with a message naming the file and the key.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/plan/hardware_profile.h"
#include "engine/plan/plan_io.h"
#include "tests/unit/plan/plan_fixture.h"
#include "tests/util/test_paths.h"

namespace sparrow::plan {
namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// A malformed file and the words its error must contain.
struct Case {
  std::string text, expect;
};

template <size_t N, typename Parse>
void ExpectErrors(const Case (&cases)[N], Parse parse) {
  for (const Case& c : cases) {
    auto r = parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << r.status().message() << "\nexpected: " << c.expect;
  }
}

TEST(HardwareProfileFileTest, RoundTripsThroughAFile) {
  HardwareProfile hw = testing::TwoThreadHardware();
  hw.kernels.push_back({TensorType::kF16, {5.5e9, 6.25e9}, {4e9, 4.5e9}});
  hw.flash.push_back({65536, 8, 700.5});
  hw.flash_file = "model.gguf";
  hw.store_seconds_per_neuron = 145.5e-9;
  hw.store_model = "model.sparrow.gguf";
  hw.store_token_overhead_seconds = 2.125e-3;
  const std::string path = sparrow::testing::TempPath("hw.yaml");
  ASSERT_TRUE(WriteHardwareProfile(hw, path).ok());
  auto back = ReadHardwareProfile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->max_threads, 2);
  ASSERT_EQ(back->kernels.size(), 2u);
  EXPECT_EQ(back->kernels[1].type, TensorType::kF16);
  EXPECT_DOUBLE_EQ(back->kernels[1].dense_bytes_per_s[1], 6.25e9);
  EXPECT_DOUBLE_EQ(back->kernels[0].gather_bytes_per_s[0], 1e9);
  ASSERT_EQ(back->flash.size(), 2u);
  EXPECT_EQ(back->flash[1].block_bytes, 65536u);
  EXPECT_EQ(back->flash[1].queue_depth, 8);
  EXPECT_DOUBLE_EQ(back->flash[1].mib_per_s, 700.5);
  EXPECT_EQ(back->flash_file, "model.gguf");
  EXPECT_NEAR(back->store_seconds_per_neuron, 145.5e-9, 1e-15);
  EXPECT_EQ(back->store_model, "model.sparrow.gguf");
  EXPECT_NEAR(back->store_token_overhead_seconds, 2.125e-3, 1e-9);
  // Profiles written before the store probe read as "not measured".
  auto old = ParseHardwareProfile(HardwareProfileToYaml(testing::TwoThreadHardware()), "old.yaml");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->store_seconds_per_neuron, 0);
}

TEST(HardwareProfileFileTest, MalformedProfilesNameFileAndKey) {
  const std::string good = HardwareProfileToYaml(testing::TwoThreadHardware());
  ASSERT_TRUE(ParseHardwareProfile(good, "hw.yaml").ok());
  const Case cases[] = {
      {"[1, 2", "hw.yaml: not valid YAML"},
      {"- a\n- b\n", "hw.yaml: must be a YAML mapping"},
      {Replace(good, "max_threads: 2", "threads: 2"), "hw.yaml: max_threads: missing"},
      {Replace(good, "max_threads: 2", "max_threads: zero"),
       "hw.yaml: max_threads: must be an integer"},
      {Replace(good, "version: 1", "version: 7"), "hw.yaml: version: is 7"},
      {Replace(good, "dense_gb_per_s: [1, 2]", "dense_gb_per_s: [1]"),
       "hw.yaml: kernels.q4_0.dense_gb_per_s: must have 2 entries"},
      {Replace(good, "gather_gb_per_s: [1, 2]", "gather_gb_per_s: [1, -2]"),
       "hw.yaml: kernels.q4_0.gather_gb_per_s[1]: must be positive"},
      {Replace(good, "  q4_0:", "  q9_9:"), "hw.yaml: kernels.q9_9: is not a tensor type"},
      {Replace(good, "depth: 1,", "depth: 0,"),
       "hw.yaml: flash.rates[0].depth: must be in 1..4096"},
      {good + "store:\n  model: m.gguf\n  ns_per_neuron: -3\n",
       "hw.yaml: store.ns_per_neuron: must be in [0, 1e6]"},
      {good + "store:\n  model: m.gguf\n", "hw.yaml: store.ns_per_neuron: missing"},
      {good + "store:\n  model: m.gguf\n  ns_per_neuron: 3\n  overhead_ms_per_token: -1\n",
       "hw.yaml: store.overhead_ms_per_token: must be in [0, 1e6] ms"},
  };
  ExpectErrors(cases, [](const std::string& t) { return ParseHardwareProfile(t, "hw.yaml"); });
  auto missing = ReadHardwareProfile(sparrow::testing::TempPath("absent.yaml"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sparrow profile-hw"), std::string::npos);
}

RunPlan SamplePlan() {
  RunPlan p;
  p.threads = 3;
  p.neuron_cache_bytes = 471859200;  // 450 MiB
  p.kv_pool_bytes = 123456789;       // not a whole MiB: must come back to the byte
  p.sparsity = 0.75;
  p.predicted_tokens_per_s = 5.5;
  p.predicted_ms_per_token = 181.8182;
  p.memory_bytes = 2000000000;
  p.budget_bytes = 2147483648;
  p.cache_fraction = 0.16;
  p.miss_rate = 0.15;
  p.active_share = 0.25;
  p.binding = {"budget", "max_sparsity"};
  return p;
}

TEST(PlanFileTest, YamlRoundTripKeepsTheChoicesToTheByte) {
  const RunPlan p = SamplePlan();
  const std::string path = sparrow::testing::TempPath("plan.yaml");
  std::ofstream(path) << PlanToYaml(p);
  auto back = ReadPlan(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->threads, 3);
  EXPECT_EQ(back->neuron_cache_bytes, p.neuron_cache_bytes);
  EXPECT_EQ(back->kv_pool_bytes, p.kv_pool_bytes);
  EXPECT_EQ(back->memory_bytes, p.memory_bytes);
  EXPECT_DOUBLE_EQ(back->sparsity, 0.75);
  EXPECT_NEAR(back->predicted_tokens_per_s, 5.5, 1e-9);
  EXPECT_EQ(back->binding, p.binding);
  EXPECT_EQ(back->objective, "speed");
}

TEST(PlanFileTest, JsonCarriesTheChoicesAndPredictions) {
  const std::string j = PlanToJson(SamplePlan());
  EXPECT_NE(j.find("\"neuron_cache_bytes\": 471859200"), std::string::npos) << j;
  EXPECT_NE(j.find("\"binding\": [\n    \"budget\""), std::string::npos) << j;
}

TEST(PlanFileTest, MalformedPlansNameFileAndKey) {
  const std::string good = PlanToYaml(SamplePlan());
  const Case cases[] = {
      {Replace(good, "threads: 3", "threads: 0"), "plan.yaml: threads: must be in 1..1024"},
      {Replace(good, "sparsity: 0.7500", "sparsity: 1.5"), "plan.yaml: sparsity: must be below 1"},
      {Replace(good, "sparsity: 0.7500", "sparsity: lots"),
       "plan.yaml: sparsity: must be a number"},
      {Replace(good, "neuron_cache_mib:", "cache_mib:"), "plan.yaml: neuron_cache_mib: missing"},
      {Replace(good, "kv_pool_mib: 117.737", "kv_pool_mib: -117.737"),
       "plan.yaml: kv_pool_mib: must not be negative"},
      {Replace(good, "[budget, max_sparsity]", "[budget, luck]"),
       "plan.yaml: binding[1]: 'luck' is not a constraint"},
      {Replace(good, "objective: speed", "objective: fun"), "plan.yaml: objective: must be speed"},
      {Replace(good, "budget_mib: 2048.000000", "budget_mib: 1024"),
       "plan.yaml: memory_mib: is over budget_mib"},
  };
  ExpectErrors(cases, [](const std::string& t) { return ParsePlan(t, "plan.yaml"); });
}

}  // namespace
}  // namespace sparrow::plan
