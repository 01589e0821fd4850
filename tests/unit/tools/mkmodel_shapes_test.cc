#include "engine/tools/mkmodel_shapes.h"

#include <gtest/gtest.h>

namespace sparrow::tools {
namespace {

TEST(ModelShapes, RealShapesMatchTheirConfigs) {
  auto smol = FindModelShape("smollm2-135m");
  ASSERT_TRUE(smol.has_value());
  EXPECT_EQ(smol->n_embd, 576);
  EXPECT_EQ(smol->n_layer, 30);
  EXPECT_TRUE(smol->tied_output);
  auto qwen = FindModelShape("qwen2.5-0.5b");
  ASSERT_TRUE(qwen.has_value());
  EXPECT_EQ(qwen->arch, "qwen2");
  EXPECT_TRUE(qwen->qkv_bias);
  auto l7 = FindModelShape("llama-2-7b");
  ASSERT_TRUE(l7.has_value());
  EXPECT_EQ(l7->n_ff, 11008);
  EXPECT_FALSE(FindModelShape("gpt-5").has_value());
  EXPECT_NE(KnownShapeNames().find("tinyllama-1.1b"), std::string::npos);
}

TEST(ModelShapes, NewerFamiliesMatchTheirConfigs) {
  auto q3 = FindModelShape("qwen3-4b");
  ASSERT_TRUE(q3.has_value());
  EXPECT_EQ(q3->arch, "qwen3");
  EXPECT_EQ(q3->head_dim, 128);  // not 2560 / 32
  EXPECT_EQ(q3->n_vocab, 151936);
  EXPECT_TRUE(q3->qk_norm);
  auto g = FindModelShape("gemma-3-1b");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->n_head_kv, 1);
  EXPECT_EQ(g->n_swa, 512);
  EXPECT_EQ(g->n_vocab, 262144);
  auto moe = FindModelShape("qwen3-30b-a3b");
  ASSERT_TRUE(moe.has_value());
  EXPECT_EQ(moe->n_layer, 48);
  EXPECT_EQ(moe->n_expert, 128);
  EXPECT_EQ(moe->n_expert_used, 8);
  EXPECT_EQ(moe->n_ff_exp, 768);
  EXPECT_FALSE(moe->tied_output);
  auto phi = FindModelShape("phi-4-mini");
  ASSERT_TRUE(phi.has_value());
  EXPECT_TRUE(phi->fused);
  EXPECT_EQ(phi->n_rot, 96);
  auto st = FindModelShape("smallthinker-4b-a0.6b");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->expert_gating, 2);
  EXPECT_NE(KnownShapeNames().find("olmoe-1b-7b"), std::string::npos);
}

TEST(ModelShapes, FileTypesParse) {
  EXPECT_EQ(ParseModelFileType("q4_k_m"), ModelFileType::kQ4_K_M);
  EXPECT_EQ(ParseModelFileType("f16"), ModelFileType::kF16);
  EXPECT_FALSE(ParseModelFileType("q3_k_s").has_value());
  EXPECT_EQ(GgufFileTypeId(ModelFileType::kQ8_0), 7u);
}

TEST(PickTensorType, FollowsLlamaQuantizeChoices) {
  using R = TensorRole;
  const auto q4km = ModelFileType::kQ4_K_M;
  EXPECT_EQ(PickTensorType(q4km, R::kAttnQ, 5, 16, 2048, false), TensorType::kQ4_K);
  EXPECT_EQ(PickTensorType(q4km, R::kOutput, 0, 16, 2048, false), TensorType::kQ6_K);
  // Tied: the embedding is the output matrix.
  EXPECT_EQ(PickTensorType(q4km, R::kTokenEmbd, 0, 16, 2048, true), TensorType::kQ6_K);
  EXPECT_EQ(PickTensorType(q4km, R::kTokenEmbd, 0, 16, 2048, false), TensorType::kQ4_K);
  // use_more_bits: first and last eighth, every third in between.
  EXPECT_EQ(PickTensorType(q4km, R::kFfnDown, 0, 16, 2048, false), TensorType::kQ6_K);
  EXPECT_EQ(PickTensorType(q4km, R::kFfnDown, 2, 16, 2048, false), TensorType::kQ4_K);
  EXPECT_EQ(PickTensorType(q4km, R::kFfnDown, 4, 16, 2048, false), TensorType::kQ6_K);
  EXPECT_EQ(PickTensorType(q4km, R::kAttnV, 15, 16, 2048, false), TensorType::kQ6_K);
  // Rows of 576 (SmolLM2) do not fit 256-element k-quant blocks.
  EXPECT_EQ(PickTensorType(q4km, R::kAttnQ, 5, 30, 576, true), TensorType::kQ5_0);
  EXPECT_EQ(PickTensorType(q4km, R::kTokenEmbd, 0, 30, 576, true), TensorType::kQ8_0);
  EXPECT_EQ(PickTensorType(ModelFileType::kQ4_0, R::kOutput, 0, 22, 2048, false),
            TensorType::kQ6_K);
  EXPECT_EQ(PickTensorType(ModelFileType::kQ4_0, R::kFfnUp, 0, 22, 2048, false), TensorType::kQ4_0);
  EXPECT_EQ(PickTensorType(ModelFileType::kQ8_0, R::kOutput, 0, 22, 2048, false),
            TensorType::kQ8_0);
  EXPECT_EQ(PickTensorType(ModelFileType::kF16, R::kOutput, 0, 22, 2048, false), TensorType::kF16);
}

}  // namespace
}  // namespace sparrow::tools
