// Model::Load on generated files: good ones bind, and each kind of wrong model is refused with
// a message naming the key or tensor at fault.
#include "engine/model/model.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::GgufWriter;
using testing::LlamaModelSpec;

Result<std::unique_ptr<Model>> LoadEdited(const LlamaModelSpec& spec,
                                          const std::function<void(GgufWriter&)>& edit) {
  auto w = testing::MakeLlamaModel(spec);
  EXPECT_TRUE(w.ok());
  edit(*w);
  const std::string path = testing::TempPath("model.gguf");
  EXPECT_TRUE(w->WriteFile(path).ok());
  auto m = Model::Load(path);
  std::remove(path.c_str());
  return m;
}

void ExpectError(const Result<std::unique_ptr<Model>>& m, StatusCode code,
                 const std::string& needle) {
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("model.gguf"), std::string::npos) << "the path is named";
}

TEST(ModelTest, BindsConfigAndWeights) {
  LlamaModelSpec s;
  s.n_embd = 48;
  s.n_head = 3;
  s.n_head_kv = 1;
  s.n_layer = 3;
  auto m = LoadEdited(s, [](GgufWriter&) {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch->name, "llama");
  EXPECT_EQ(c.n_embd, 48);
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.kv_dim(), 16);
  EXPECT_EQ(c.n_vocab, 300);
  EXPECT_EQ((*m)->weights().layers.size(), 3u);
  EXPECT_FALSE((*m)->weights().tied_output);
}

TEST(ModelTest, TiedOutputReusesEmbedding) {
  LlamaModelSpec s;
  s.tied_output = true;
  auto m = LoadEdited(s, [](GgufWriter&) {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->weights().tied_output);
  EXPECT_EQ((*m)->weights().output.data, (*m)->weights().token_embd.data);
}

TEST(ModelTest, LinearRopeScaling) {
  auto m = LoadEdited({}, [](GgufWriter& w) {
    w.AddString("llama.rope.scaling.type", "linear");
    w.AddF32("llama.rope.scaling.factor", 4.0f);
  });
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FLOAT_EQ((*m)->config().rope_freq_scale, 0.25f);
  ExpectError(LoadEdited({}, [](GgufWriter& w) { w.AddString("llama.rope.scaling.type", "xpos"); }),
              StatusCode::kUnsupported, "xpos");
}

TEST(ModelTest, YarnRopeScaling) {
  auto m = LoadEdited({}, [](GgufWriter& w) {
    w.AddString("llama.rope.scaling.type", "yarn");
    w.AddF32("llama.rope.scaling.factor", 4.0f);
    w.AddU32("llama.rope.scaling.original_context_length", 64);
  });
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 0.25f);
  EXPECT_EQ(c.rope_ext_factor, 1.0f);
  EXPECT_EQ(c.rope_n_ctx_orig, 64);
  // llama.cpp derives 0.1 ln(4) + 1 and divides it out again (ggml's rope multiplies it back).
  EXPECT_NEAR(c.rope_attn_factor, 1.0f, 1e-6);
}

TEST(ModelTest, RopeFreqsAreBoundAndChecked) {
  LlamaModelSpec s;  // head_dim 16: 8 pairs
  auto m = LoadEdited(s, [](GgufWriter& w) {
    w.AddTensorF32("rope_freqs.weight", TensorType::kF32, {8}, std::vector<float>(8, 2.0f));
  });
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->weights().rope_freqs, std::vector<float>(8, 2.0f));
  ExpectError(LoadEdited(s,
                         [](GgufWriter& w) {
                           w.AddTensorF32("rope_freqs.weight", TensorType::kF32, {16},
                                          std::vector<float>(16, 1.0f));
                         }),
              StatusCode::kCorrupt, "rope_freqs.weight' has shape 16, expected 8");
}

TEST(ModelTest, TensorTheArchitectureDoesNotUseIsAnError) {
  // A Qwen3-style QK-norm in a llama file: computing without it would be silently wrong.
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.AddTensorF32("blk.0.attn_q_norm.weight", TensorType::kF32, {16},
                                          std::vector<float>(16, 1.0f));
                         }),
              StatusCode::kUnsupported, "blk.0.attn_q_norm.weight' is not used");
}

TEST(ModelTest, FamilyTensorsAreRequired) {
  auto m = LoadEdited({}, [](GgufWriter& w) {
    w.RemoveKey("general.architecture");
    w.AddString("general.architecture", "qwen3");
  });
  // The keys are under "llama.", so the first thing missing is a qwen3 key.
  ExpectError(m, StatusCode::kNotFound, "qwen3.embedding_length");
}

// The newer families' hyper-parameters, read from the reference files in ../shared/arch.
Result<std::unique_ptr<Model>> LoadArch(const std::string& stem) {
  return Model::Load(testing::SharedDir() + "/arch/models/" + stem + ".gguf");
}

TEST(ModelTest, Gemma3SlidingWindowLayersAndScales) {
  auto m = LoadArch("synth-gemma3-f32");
  if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << m.status().ToString();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch->name, "gemma3");
  EXPECT_EQ(c.n_swa, 8);
  EXPECT_EQ(c.swa_layers, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));  // five local, one global
  EXPECT_FLOAT_EQ(c.rope_freq_base_swa, 10000.0f);
  EXPECT_FLOAT_EQ(c.q_scale, 0.125f);     // 1/sqrt(head_dim 64)
  EXPECT_FLOAT_EQ(c.embed_scale, 16.0f);  // sqrt(n_embd 256)
  EXPECT_EQ(c.ffn_kind, FfnKind::kGeGlu);
  EXPECT_EQ((*m)->weights().layers[0].attn_q_norm.size(), 64u);
  EXPECT_EQ((*m)->weights().layers[5].ffn_post_norm.size(), 256u);
}

TEST(ModelTest, Qwen3MoeExperts) {
  auto m = LoadArch("synth-qwen3moe-f32");
  if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << m.status().ToString();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 2);
  EXPECT_EQ(c.n_ff_exp, 128);
  EXPECT_TRUE(c.expert_weights_norm);
  const LayerWeights& l = (*m)->weights().layers[1];
  EXPECT_EQ(l.ffn_gate_exps.rows, 8 * 128);
  EXPECT_EQ(l.ffn_down_exps.rows, 8 * 256);
  EXPECT_EQ(l.ffn_gate.data, nullptr);
  const kernels::WeightMatrix e3 = ExpertRows(l.ffn_down_exps, 3, 256);
  EXPECT_EQ(
      static_cast<const uint8_t*>(e3.data) - static_cast<const uint8_t*>(l.ffn_down_exps.data),
      3 * 256 * 128 * 4);
}

TEST(ModelTest, UnsupportedArchitecture) {
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("general.architecture");
                           w.AddString("general.architecture", "mamba");
                         }),
              StatusCode::kUnsupported, "architecture 'mamba' is not supported");
}

TEST(ModelTest, MissingOrBadHyperParameters) {
  ExpectError(LoadEdited({}, [](GgufWriter& w) { w.RemoveKey("llama.embedding_length"); }),
              StatusCode::kNotFound, "llama.embedding_length");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("llama.block_count");
                           w.AddU32("llama.block_count", 0);
                         }),
              StatusCode::kCorrupt, "llama.block_count");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("llama.attention.head_count_kv");
                           w.AddU32("llama.attention.head_count_kv", 3);
                         }),
              StatusCode::kCorrupt, "head_count_kv");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("llama.block_count");
                           w.AddString("llama.block_count", "two");
                         }),
              StatusCode::kCorrupt, "llama.block_count");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("llama.attention.layer_norm_rms_epsilon");
                           w.AddF32("llama.attention.layer_norm_rms_epsilon", -1.0f);
                         }),
              StatusCode::kCorrupt, "layer_norm_rms_epsilon");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveKey("llama.rope.dimension_count");
                           w.AddU32("llama.rope.dimension_count", 17);
                         }),
              StatusCode::kCorrupt, "rope.dimension_count");
}

TEST(ModelTest, MissingTensor) {
  ExpectError(LoadEdited({}, [](GgufWriter& w) { w.RemoveTensor("blk.1.ffn_up.weight"); }),
              StatusCode::kNotFound, "blk.1.ffn_up.weight");
}

TEST(ModelTest, WrongShape) {
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveTensor("blk.0.attn_k.weight");
                           w.AddTensorF32("blk.0.attn_k.weight", TensorType::kF32, {64, 64},
                                          std::vector<float>(64 * 64));
                         }),
              StatusCode::kCorrupt, "blk.0.attn_k.weight' has shape 64 x 64, expected 64 x 32");
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveTensor("output_norm.weight");
                           w.AddTensorF32("output_norm.weight", TensorType::kF32, {32},
                                          std::vector<float>(32));
                         }),
              StatusCode::kCorrupt, "output_norm.weight");
}

TEST(ModelTest, UnsupportedTensorType) {
  // An I32 matrix is a valid GGUF tensor but nothing Sparrow can multiply with.
  ExpectError(LoadEdited({},
                         [](GgufWriter& w) {
                           w.RemoveTensor("blk.0.attn_q.weight");
                           w.AddTensor("blk.0.attn_q.weight", TensorType::kI32, {64, 64},
                                       std::vector<uint8_t>(64 * 64 * 4));
                         }),
              StatusCode::kUnsupported, "blk.0.attn_q.weight' has type i32");
}

TEST(ModelTest, VocabularyMustMatchEmbedding) {
  LlamaModelSpec s;
  auto m = LoadEdited(s, [](GgufWriter& w) {
    w.RemoveTensor("token_embd.weight");
    w.AddTensorF32("token_embd.weight", TensorType::kF32, {64, 200}, std::vector<float>(64 * 200));
  });
  ExpectError(m, StatusCode::kCorrupt, "token_embd.weight");
}

}  // namespace
}  // namespace sparrow
