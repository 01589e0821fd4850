// The store probe on a real converted file: both decodes run, the active neurons are counted,
// and the cost per neuron is never negative; a file with no store, or bundles over the limit,
// is refused naming the file.
#include "engine/tools/store_probe.h"

#include <gtest/gtest.h>

#include "tests/util/converted_model.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

TEST(StoreProbe, MeasuresAConvertedModelThroughItsStore) {
  StoreProbeOptions o;
  o.model = testing::WriteConvertedSyntheticModel("store-probe", TensorType::kQ8_0);
  ASSERT_FALSE(o.model.empty());
  o.threads = 2;
  o.tokens = 4;
  o.reps = 1;
  auto r = MeasureStoreOverhead(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->mapped_s_per_token, 0);
  EXPECT_GT(r->store_s_per_token, 0);
  // Two layers of 256 neurons; the predictor runs some of them, not none, not more than all.
  EXPECT_GT(r->neurons_per_token, 0);
  EXPECT_LE(r->neurons_per_token, 2 * 256);
  EXPECT_GE(r->seconds_per_neuron, 0);

  o.max_bundle_bytes = 4096;
  auto big = MeasureStoreOverhead(o);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("store-probe"), std::string::npos);
  EXPECT_NE(big.status().message().find("MiB"), std::string::npos);

  o = StoreProbeOptions{};
  o.model = testing::ModelPath("stories260K.gguf");
  auto mapped = MeasureStoreOverhead(o);
  ASSERT_FALSE(mapped.ok());
  EXPECT_NE(mapped.status().message().find("not converted"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::tools
