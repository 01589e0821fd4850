// ClipModel: the synthetic gemma3 projector (tests/util/synthetic_projector.h) loads with its
// hyper-parameters, and every broken file is refused with the file and the key or tensor named.
#include "engine/vision/clip_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/synthetic_projector.h"

namespace sparrow::vision {
namespace {

using testing::GgufWriter;

Result<std::unique_ptr<ClipModel>> Load(const GgufWriter& w, std::vector<uint8_t>& bytes) {
  bytes = w.Bytes();
  auto f = GgufFile::FromMemory(bytes, "synth.mmproj");
  if (!f.ok()) return f.status();
  return ClipModel::FromGguf(std::move(*f));
}

// The error of loading `w`, which must fail.
std::string Error(const GgufWriter& w) {
  std::vector<uint8_t> bytes;
  auto m = Load(w, bytes);
  EXPECT_FALSE(m.ok());
  return m.ok() ? "" : m.status().ToString();
}

TEST(ClipModelTest, LoadsTheSyntheticProjector) {
  for (TensorType type : {TensorType::kF32, TensorType::kF16}) {
    testing::ProjectorSpec spec;
    spec.matrix_type = type;
    std::vector<uint8_t> bytes;
    auto m = Load(testing::MakeGemma3Projector(spec), bytes);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const ClipHparams& hp = (*m)->hparams();
    EXPECT_EQ(hp.projector, ProjectorType::kGemma3);
    EXPECT_EQ(hp.image_size, 112);
    EXPECT_EQ(hp.n_patches(), 64);
    EXPECT_EQ(hp.head_dim, 16);
    EXPECT_EQ(hp.n_merge, 2);
    EXPECT_EQ(hp.n_image_tokens(), 16);
    EXPECT_EQ(hp.n_text_embd, 256);
    EXPECT_FLOAT_EQ(hp.image_std[2], 0.28f);
    EXPECT_EQ((*m)->layers().size(), 2u);
    EXPECT_EQ((*m)->patch_embd().cols, 3 * 14 * 14);
    EXPECT_EQ((*m)->patch_embd().type, TensorType::kF16);  // as ggml's conv_2d computes
    EXPECT_EQ((*m)->input_proj().rows, 256);
    EXPECT_EQ((*m)->input_proj().cols, 64);
  }
}

TEST(ClipModelTest, RefusesMissingKeysAndTensors) {
  GgufWriter w = testing::MakeGemma3Projector({});
  w.RemoveKey("clip.vision.patch_size");
  std::string e = Error(w);
  EXPECT_NE(e.find("synth.mmproj"), std::string::npos) << e;
  EXPECT_NE(e.find("clip.vision.patch_size"), std::string::npos) << e;

  w = testing::MakeGemma3Projector({});
  w.RemoveKey("clip.projector_type");
  e = Error(w);
  EXPECT_NE(e.find("not a projector file"), std::string::npos) << e;

  w = testing::MakeGemma3Projector({});
  w.RemoveKey("clip.vision.attention.layer_norm_epsilon");
  e = Error(w);
  EXPECT_NE(e.find("layer_norm_epsilon"), std::string::npos) << e;

  w = testing::MakeGemma3Projector({});
  ASSERT_TRUE(w.RemoveTensor("v.blk.1.attn_k.weight"));
  e = Error(w);
  EXPECT_NE(e.find("synth.mmproj"), std::string::npos) << e;
  EXPECT_NE(e.find("'v.blk.1.attn_k.weight' is missing"), std::string::npos) << e;

  w = testing::MakeGemma3Projector({});
  ASSERT_TRUE(w.RemoveTensor("mm.input_projection.weight"));
  e = Error(w);
  EXPECT_NE(e.find("mm.input_projection.weight"), std::string::npos) << e;
}

TEST(ClipModelTest, RefusesWrongShapesTypesAndValues) {
  GgufWriter w = testing::MakeGemma3Projector({});
  ASSERT_TRUE(w.RemoveTensor("v.blk.0.ffn_up.weight"));
  w.AddTensorF32("v.blk.0.ffn_up.weight", TensorType::kF32, {64, 96},
                 std::vector<float>(64 * 96, 0.0f));
  std::string e = Error(w);
  EXPECT_NE(e.find("'v.blk.0.ffn_up.weight' has shape [64, 96], expected [64, 128]"),
            std::string::npos)
      << e;

  // A norm weight stored quantized: 64 values as two Q8_0 blocks.
  w = testing::MakeGemma3Projector({});
  ASSERT_TRUE(w.RemoveTensor("v.post_ln.weight"));
  w.AddTensor("v.post_ln.weight", TensorType::kQ8_0, {64}, std::vector<uint8_t>(68, 0));
  e = Error(w);
  EXPECT_NE(e.find("'v.post_ln.weight' is of type q8_0"), std::string::npos) << e;

  w = testing::MakeGemma3Projector({});
  w.RemoveKey("clip.vision.image_std");
  w.AddArray<float>("clip.vision.image_std", {0.5f, 0.0f, 0.5f});
  e = Error(w);
  EXPECT_NE(e.find("clip.vision.image_std"), std::string::npos) << e;

  // 8 patches a side cannot be pooled by 3.
  testing::ProjectorSpec spec;
  spec.n_merge = 3;
  e = Error(testing::MakeGemma3Projector(spec));
  EXPECT_NE(e.find("scale_factor"), std::string::npos) << e;
}

TEST(ClipModelTest, RefusesProjectorTypesNotRunYetByName) {
  GgufWriter w = testing::MakeGemma3Projector({});
  w.RemoveKey("clip.projector_type");
  w.AddString("clip.projector_type", "qwen2.5vl_merger");
  const std::string e = Error(w);
  EXPECT_NE(e.find("'qwen2.5vl_merger'"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported yet"), std::string::npos) << e;
}

}  // namespace
}  // namespace sparrow::vision
