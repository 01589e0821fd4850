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
