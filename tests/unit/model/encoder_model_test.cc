// Model::Load on the encoder families (synthetic_arch.h's bert and nomic-bert): what binds, and
// the refusals naming the key or tensor at fault.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "engine/model/model.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::ArchFamily;
using testing::GgufWriter;

// The family's model with `edit` applied, loaded; skipped without the bge vocabulary.
Result<std::unique_ptr<Model>> LoadEncoder(ArchFamily family,
                                           const std::function<void(GgufWriter&)>& edit = {}) {
  // Drawn once per family (30522 embedding rows: the slow part under ASan), edited in a copy.
  static std::map<ArchFamily, Result<GgufWriter>> made;
  auto it = made.find(family);
  if (it == made.end()) it = made.emplace(family, testing::MakeArchModel({family, 1})).first;
  if (!it->second.ok()) return it->second.status();
  GgufWriter w = *it->second;
  if (edit) edit(w);
  const std::string path = testing::TempPath("encoder.gguf");
  EXPECT_TRUE(w.WriteFile(path).ok());
  auto m = Model::Load(path);
  std::remove(path.c_str());
  return m;
}

bool HaveVocab() {
  return testing::FileExists(testing::ModelPath("vocab/ggml-vocab-bert-bge.gguf"));
}

TEST(EncoderModelTest, BertBindsPositionsBiasesAndNoHead) {
  if (!HaveVocab()) GTEST_SKIP();
  auto m = LoadEncoder(ArchFamily::kBert);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_TRUE(c.embedding_only());
  EXPECT_FALSE(c.causal);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-12f);
  EXPECT_FALSE(c.uses_rope(0));
  EXPECT_EQ(c.ffn_kind, FfnKind::kGelu);
  const ModelWeights& w = (*m)->weights();
  EXPECT_FALSE(w.has_output());
  EXPECT_EQ(w.position_embd.rows, 512);
  EXPECT_EQ(w.token_type0.size(), 128u);
  EXPECT_EQ(w.layers[1].bq.size(), 128u);
  EXPECT_EQ(w.layers[1].bo.size(), 128u);
  EXPECT_EQ(w.layers[1].ffn_up_b.size(), 256u);
  EXPECT_EQ(w.layers[1].ffn_gate.data, nullptr);
  EXPECT_EQ(w.layers[1].layer_out_norm_b.size(), 128u);
}

TEST(EncoderModelTest, NomicBertBindsFusedQkvAndSwiGlu) {
  if (!HaveVocab()) GTEST_SKIP();
  auto m = LoadEncoder(ArchFamily::kNomicBert);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_TRUE(c.uses_rope(0));
  EXPECT_EQ(c.arch->rope_style, RopeStyle::kNeox);
  EXPECT_FLOAT_EQ(c.rope_freq_base, 1000.0f);
  const ModelWeights& w = (*m)->weights();
  EXPECT_EQ(w.position_embd.data, nullptr);
  EXPECT_EQ(w.layers[0].wk.rows, 128);
  EXPECT_NE(w.layers[0].ffn_gate.data, nullptr);
  EXPECT_TRUE(w.layers[0].bq.empty());
}

TEST(EncoderModelTest, RefusalsNameWhatIsWrong) {
  if (!HaveVocab()) GTEST_SKIP();
  auto no_norm = LoadEncoder(ArchFamily::kBert,
                             [](GgufWriter& w) { w.RemoveTensor("blk.1.attn_output_norm.bias"); });
  ASSERT_FALSE(no_norm.ok());
  EXPECT_NE(no_norm.status().message().find("blk.1.attn_output_norm.bias"), std::string::npos)
      << no_norm.status().ToString();
  auto no_eps = LoadEncoder(ArchFamily::kNomicBert, [](GgufWriter& w) {
    w.RemoveKey("nomic-bert.attention.layer_norm_epsilon");
  });
  ASSERT_FALSE(no_eps.ok());
  EXPECT_NE(no_eps.status().message().find("layer_norm_epsilon"), std::string::npos)
      << no_eps.status().ToString();
  // A decoder's output norm is not an encoder's: computing without it would be wrong silently.
  auto head = LoadEncoder(ArchFamily::kBert, [](GgufWriter& w) {
    w.AddTensorF32("output_norm.weight", TensorType::kF32, {128}, std::vector<float>(128, 1.0f));
  });
  ASSERT_FALSE(head.ok());
  EXPECT_NE(head.status().message().find("output_norm.weight"), std::string::npos);
}

TEST(EncoderModelTest, OnlyEncodersMayBeNonCausal) {
  auto decoder = LoadEncoder(ArchFamily::kSmollm3,
                             [](GgufWriter& w) { w.AddBool("smollm3.attention.causal", false); });
  ASSERT_FALSE(decoder.ok());
  EXPECT_EQ(decoder.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(decoder.status().message().find("attention.causal"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
