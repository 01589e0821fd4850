// BalanceRouters: a random MoE model's routers, which prefer a few experts for what every token's
// hidden state shares, spread their choices once that shared direction is removed; the file
// stays a valid model and only its routers change.
#include "engine/tools/mkmodel_balance.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/model/model.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

TEST(MkModelBalanceTest, RemovingTheSharedDirectionSpreadsTheRouting) {
  const std::string path = testing::TempPath("balance-olmoe.gguf");
  ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kOlmoe, 9}, path).ok());
  const std::string before = testing::ReadFileOrDie(path);
  const std::string text = testing::SharedDir() + "/kjv/text/kjv-eval.txt";
  if (!testing::FileExists(text)) GTEST_SKIP() << text << " is missing";
  auto b = BalanceRouters(path, text, 256, 2);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_LT(b->hot10_after, b->hot10_before);
  const std::string after = testing::ReadFileOrDie(path);
  ASSERT_EQ(after.size(), before.size());
  // Only the routers' bytes moved.
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  size_t changed = 0, in_routers = 0;
  std::vector<std::pair<size_t, size_t>> routers;
  for (const LayerWeights& l : (*model)->weights().layers) {
    const auto* p = static_cast<const uint8_t*>(l.ffn_gate_inp.data);
    const size_t off = static_cast<size_t>(p - (*model)->file().base());
    routers.emplace_back(off, off + l.ffn_gate_inp.row_stride_bytes * l.ffn_gate_inp.rows);
  }
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i]) continue;
    ++changed;
    for (const auto& [lo, hi] : routers) in_routers += i >= lo && i < hi;
  }
  EXPECT_GT(changed, 0u);
  EXPECT_EQ(in_routers, changed);
}

TEST(MkModelBalanceTest, RefusesModelsWithoutExperts) {
  auto b = BalanceRouters(testing::ModelPath("stories260K.gguf"), "/nonexistent", 256, 1);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().ToString().find("no experts"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::tools
