// The shapes of the newer families: each one-layer cut is written, loads with the family's
// reader and runs a forward pass with finite logits. The vocabulary stays the file's 32000
// tokens here (n_vocab 0) to keep the files small; padding is tested on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/tools/mkmodel_generate.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

using testing::ModelPath;
using testing::TempPath;

SyntheticModelSpec OneLayer(std::string_view shape, ModelFileType ftype) {
  SyntheticModelSpec spec;
  spec.shape = *FindModelShape(shape);
  spec.shape.n_vocab = 0;
  spec.ftype = ftype;
  spec.n_layer = 1;
  spec.vocab_path = ModelPath("vocab/ggml-vocab-llama-spm.gguf");
  spec.out_path = TempPath(std::string(shape) + ".gguf");
  spec.threads = 2;
  return spec;
}

// A prompt of three tokens and one decoded step; every logit finite.
void ExpectForwardRuns(const Model& model) {
  ForwardPass pass(model, nullptr, MakeDefaultFeedForward(model, nullptr));
  ContiguousKvCache cache(model.config().n_layer, 8, model.config().kv_dim());
  std::vector<float> logits;
  const int32_t prompt[] = {1, 450, 4996};
  ASSERT_TRUE(pass.Run(prompt, 0, cache, false, &logits).ok());
  const int32_t next[] = {17};
  ASSERT_TRUE(pass.Run(next, 3, cache, false, &logits).ok());
  ASSERT_EQ(static_cast<int64_t>(logits.size()), model.config().n_vocab);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

struct Expected {
  const char* shape;
  const char* arch;
  int64_t head_dim;
  int64_t n_expert;
};

TEST(MkModelFamilies, EveryNewShapeLoadsAndRuns) {
  const Expected cases[] = {
      {"qwen3-0.6b", "qwen3", 128, 0},         {"qwen3-1.7b", "qwen3", 128, 0},
      {"qwen3-4b", "qwen3", 128, 0},           {"gemma-3-1b", "gemma3", 256, 0},
      {"gemma-3-4b", "gemma3", 256, 0},        {"llama-3.2-3b", "llama", 128, 0},
      {"phi-4-mini", "phi3", 128, 0},          {"olmoe-1b-7b", "olmoe", 128, 64},
      {"qwen3-30b-a3b", "qwen3moe", 128, 128}, {"smallthinker-4b-a0.6b", "smallthinker", 128, 32},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE(e.shape);
    const SyntheticModelSpec spec = OneLayer(e.shape, ModelFileType::kQ4_0);
    auto summary = WriteSyntheticModel(spec);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    auto model = Model::Load(spec.out_path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const ModelConfig& c = (*model)->config();
    EXPECT_EQ(c.arch->name, e.arch);
    EXPECT_EQ(c.n_layer, 1);
    EXPECT_EQ(c.head_dim, e.head_dim);
    EXPECT_EQ(c.n_expert, e.n_expert);
    EXPECT_EQ(c.n_head_kv, spec.shape.n_head_kv);
    if (e.n_expert > 0) {
      EXPECT_EQ(c.n_ff_exp, spec.shape.n_ff_exp);
      EXPECT_EQ(c.n_expert_used, spec.shape.n_expert_used);
    }
    ExpectForwardRuns(**model);
    std::remove(spec.out_path.c_str());  // hundreds of MiB each
  }
}

// The shape with narrow matrices (the family's keys and tensors kept), for tests of many layers.
SyntheticModelSpec Narrow(std::string_view shape, ModelFileType ftype, int64_t n_layer) {
  SyntheticModelSpec spec = OneLayer(shape, ftype);
  ModelShape& s = spec.shape;
  s.head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  s.n_embd = 256;
  s.n_ff = 256;
  s.n_ff_exp = s.n_expert > 0 ? 256 : 0;
  s.n_expert = std::min<int64_t>(s.n_expert, 16);
  spec.n_layer = n_layer;
  return spec;
}

TEST(MkModelFamilies, FamilyDetailsReachTheConfig) {
  auto gemma = Narrow("gemma-3-4b", ModelFileType::kQ8_0, 6);
  ASSERT_TRUE(WriteSyntheticModel(gemma).ok());
  auto g = Model::Load(gemma.out_path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->config().n_swa, 1024);
  EXPECT_TRUE((*g)->config().is_swa(4));
  EXPECT_FALSE((*g)->config().is_swa(5));  // one global layer in six
  EXPECT_FLOAT_EQ((*g)->config().rope_freq_scale, 1.0f / 8);
  EXPECT_TRUE((*g)->weights().tied_output);
  EXPECT_EQ((*g)->weights().layers[0].ffn_post_norm.size(), 256u);

  auto phi = Narrow("phi-4-mini", ModelFileType::kQ4_K_M, 1);
  ASSERT_TRUE(WriteSyntheticModel(phi).ok());
  auto p = Model::Load(phi.out_path);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p.value()->config().n_rot, 96);
  EXPECT_TRUE(p.value()->config().rope_long_factors);  // 131072 > 4096

  auto moe = Narrow("qwen3-30b-a3b", ModelFileType::kQ4_K_M, 1);
  ASSERT_TRUE(WriteSyntheticModel(moe).ok());
  auto m = Model::Load(moe.out_path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const LayerWeights& l = (*m)->weights().layers[0];
  EXPECT_EQ(l.ffn_gate_inp.type, TensorType::kF32);  // the router is not quantized
  EXPECT_EQ(l.ffn_up_exps.type, TensorType::kQ4_K);
  EXPECT_EQ(l.ffn_down_exps.type, TensorType::kQ6_K);  // use_more_bits: the last eighth
  EXPECT_EQ(l.attn_q_norm.size(), 128u);
}

TEST(MkModelFamilies, VocabularyIsPaddedToTheRealSize) {
  SyntheticModelSpec spec = OneLayer("qwen3-0.6b", ModelFileType::kQ8_0);
  spec.shape.n_vocab = 40000;
  auto summary = WriteSyntheticModel(spec);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->n_vocab, 40000);
  auto model = Model::Load(spec.out_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->config().n_vocab, 40000);
  EXPECT_EQ((*model)->weights().token_embd.rows, 40000);
  const GgufArray* types = (*model)->file().GetArray("tokenizer.ggml.token_type").value();
  ASSERT_EQ(types->size, 40000u);
  int32_t last = 0;
  std::memcpy(&last, types->data + 4 * 39999, 4);
  EXPECT_EQ(last, 5);  // unused
  EXPECT_EQ((*model)->file().GetArray("tokenizer.ggml.tokens").value()->strings[39999],
            "<unused_39999>");
  // A vocabulary larger than asked is kept whole.
  spec.shape.n_vocab = 100;
  EXPECT_EQ(WriteSyntheticModel(spec)->n_vocab, 32000);
}

}  // namespace
}  // namespace sparrow::tools
