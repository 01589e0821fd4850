#include "engine/tools/mkmodel_generate.h"

#include <gtest/gtest.h>

#include <tuple>

#include "engine/kernels/dequantize.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/sparse/sparse_plan.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

using testing::ModelPath;
using testing::ReadFileOrDie;
using testing::TempPath;

SyntheticModelSpec TinySpec(const char* shape, ModelFileType ftype, const std::string& out) {
  SyntheticModelSpec spec;
  spec.shape = *FindModelShape(shape);
  spec.ftype = ftype;
  spec.n_layer = 1;
  spec.vocab_path = ModelPath("vocab/ggml-vocab-llama-spm.gguf");
  spec.out_path = out;
  spec.threads = 2;
  return spec;
}

TEST(WriteSyntheticModel, TinyLlamaQ4KMLoadsWithExpectedConfig) {
  const std::string path = TempPath("tiny-q4_k_m.gguf");
  auto summary = WriteSyntheticModel(TinySpec("tiny", ModelFileType::kQ4_K_M, path));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->n_vocab, 32000);

  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch->name, "llama");
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_ff, 512);
  EXPECT_EQ(c.n_layer, 1);  // cut by --layers
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.n_vocab, 32000);
  const ModelWeights& w = (*model)->weights();
  EXPECT_FALSE(w.tied_output);
  EXPECT_EQ(w.output.type, TensorType::kQ6_K);
  EXPECT_EQ(w.token_embd.type, TensorType::kQ4_K);
  EXPECT_EQ(w.layers[0].wq.type, TensorType::kQ4_K);
  EXPECT_EQ(w.layers[0].wv.type, TensorType::kQ6_K);  // the last eighth gets more bits
  EXPECT_EQ((*model)->file().GetUInt("general.file_type").value(), 15u);
  EXPECT_TRUE((*model)->file().Find("tokenizer.ggml.scores") != nullptr);
  EXPECT_FALSE(testing::FileExists(path + ".partial"));
}

TEST(WriteSyntheticModel, TinyQwen2HasBiasesAndTiedOutput) {
  const std::string path = TempPath("tiny-qwen2-q8_0.gguf");
  auto summary = WriteSyntheticModel(TinySpec("tiny-qwen2", ModelFileType::kQ8_0, path));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->config().arch->name, "qwen2");
  const ModelWeights& w = (*model)->weights();
  EXPECT_TRUE(w.tied_output);
  EXPECT_EQ(w.token_embd.type, TensorType::kQ8_0);
  ASSERT_EQ(w.layers.size(), 1u);
  EXPECT_EQ(w.layers[0].bq.size(), 256u);
  EXPECT_EQ(w.layers[0].bk.size(), 128u);
  // Norm weights are drawn near 1, so activations keep a realistic scale.
  for (float x : w.layers[0].attn_norm) {
    EXPECT_GT(x, 0.9f);
    EXPECT_LT(x, 1.1f);
  }
}

TEST(WriteSyntheticModel, OutputDoesNotDependOnThreadCount) {
  SyntheticModelSpec a = TinySpec("tiny", ModelFileType::kQ4_0, TempPath("t1.gguf"));
  SyntheticModelSpec b = a;
  a.threads = 1;
  b.threads = 2;
  b.out_path = TempPath("t2.gguf");
  ASSERT_TRUE(WriteSyntheticModel(a).ok());
  ASSERT_TRUE(WriteSyntheticModel(b).ok());
  EXPECT_TRUE(ReadFileOrDie(a.out_path) == ReadFileOrDie(b.out_path));
  b.seed = 2;
  ASSERT_TRUE(WriteSyntheticModel(b).ok());
  EXPECT_FALSE(ReadFileOrDie(a.out_path) == ReadFileOrDie(b.out_path));
}

TEST(WriteSyntheticModel, MissingVocabularyIsAnError) {
  SyntheticModelSpec spec = TinySpec("tiny", ModelFileType::kF16, TempPath("nov.gguf"));
  spec.vocab_path = TempPath("no-such-vocab.gguf");
  auto summary = WriteSyntheticModel(spec);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("no-such-vocab"), std::string::npos);
  EXPECT_FALSE(testing::FileExists(spec.out_path));
}

// The measured share of neurons a PWRI file's predictor chooses per decoded token.
double DecodedActiveShare(const Model& model, int n_tokens) {
  ForwardPass pass(model, nullptr, MakeDefaultFeedForward(model, nullptr));
  ContiguousKvCache cache(model.config().n_layer, n_tokens, model.config().kv_dim());
  std::vector<float> logits;
  int32_t token = 1;
  for (int i = 0; i < n_tokens; ++i) {
    const int32_t t[] = {token};
    EXPECT_TRUE(pass.Run(t, i, cache, false, &logits).ok());
    token = 100 + (token * 7919) % 20000;
  }
  const FfnCounters c = pass.ffn().counters();
  EXPECT_GT(c.neurons_total, 0);
  return static_cast<double>(c.neurons_computed) / static_cast<double>(c.neurons_total);
}

TEST(WriteSyntheticModel, PowerInferFormatChoosesTheAskedShareOfNeurons) {
  for (const auto& [ffn, active, hot] :
       {std::tuple{"relu", 0.3, 0.0}, std::tuple{"drelu", 0.5, 1.2}}) {
    SCOPED_TRACE(std::string(ffn) + " " + std::to_string(active));
    SyntheticModelSpec spec = TinySpec("tiny", ModelFileType::kQ4_0, TempPath("pwri.gguf"));
    spec.pwri = true;
    spec.drelu = std::string_view(ffn) == "drelu";
    spec.active = active;
    spec.hot.power = hot;
    auto summary = WriteSyntheticModel(spec);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_NEAR(summary->active, active, 1e-3);
    // Equal frequencies: 80% of activations need 80% of neurons; a power law needs fewer.
    if (hot == 0.0) {
      EXPECT_NEAR(summary->hot_set_80, 0.8, 0.01);
    } else {
      EXPECT_LT(summary->hot_set_80, 0.65);
    }

    auto model = Model::Load(spec.out_path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const ModelConfig& c = (*model)->config();
    EXPECT_TRUE(c.powerinfer);
    EXPECT_EQ(c.arch->name, spec.drelu ? "bamboo" : "llama");
    EXPECT_EQ(c.ffn_kind, spec.drelu ? FfnKind::kDReluGlu : FfnKind::kReluGlu);
    const LayerWeights& l = (*model)->weights().layers[0];
    EXPECT_EQ(l.ffn_down.data, nullptr);
    EXPECT_EQ(l.ffn_down_t.rows, 512);
    EXPECT_EQ(l.pred_fc1.rows, 128);  // n_embd / 8 is under the least rank
    EXPECT_EQ(l.pred_fc2.cols, 128);
    EXPECT_NEAR(DecodedActiveShare(**model, 24), active, 0.06);
  }
}

// A Q4_K_M file's K-quant down rows have no direct accumulation kernel: the sparse plan reads a
// Q8_0 copy instead, and the predictor still picks the asked share.
TEST(WriteSyntheticModel, PowerInferKQuantFilesRunOnAQ8_0DownCopy) {
  SyntheticModelSpec spec = TinySpec("tiny", ModelFileType::kQ4_K_M, TempPath("pwri-k.gguf"));
  spec.pwri = true;
  spec.active = 0.4;
  ASSERT_TRUE(WriteSyntheticModel(spec).ok());
  auto model = Model::Load(spec.out_path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const TensorType file_type = (*model)->weights().layers[0].ffn_down_t.type;
  EXPECT_TRUE(file_type == TensorType::kQ4_K || file_type == TensorType::kQ6_K)
      << TensorTypeName(file_type);
  auto plan = MakeSparsePlan(**model, {}, nullptr);
  ASSERT_TRUE(plan.ok() && *plan) << plan.status().ToString();
  EXPECT_EQ((*plan)->down_t[0].type, TensorType::kQ8_0);
  EXPECT_EQ((*plan)->owned_bytes(), kernels::RowBytes(TensorType::kQ8_0, 256) * 512);
  EXPECT_NEAR(DecodedActiveShare(**model, 24), 0.4, 0.06);
}

TEST(WriteSyntheticModel, PowerInferFormatRefusesWhatItCannotWrite) {
  SyntheticModelSpec spec = TinySpec("tiny-qwen2", ModelFileType::kQ8_0, TempPath("pq.gguf"));
  spec.pwri = true;
  auto qwen = WriteSyntheticModel(spec);
  ASSERT_FALSE(qwen.ok());
  EXPECT_NE(qwen.status().message().find("llama-architecture"), std::string::npos);
  spec = TinySpec("tiny", ModelFileType::kQ8_0, TempPath("pr.gguf"));
  spec.pwri = true;
  spec.predictor_rank = 100;
  auto rank = WriteSyntheticModel(spec);
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("--predictor-rank 100"), std::string::npos);
  spec.predictor_rank = 0;
  spec.active = 1.0;
  EXPECT_FALSE(WriteSyntheticModel(spec).ok());
  EXPECT_FALSE(testing::FileExists(spec.out_path));
  EXPECT_FALSE(ParseHotProfile("powerlaw:").ok());
  EXPECT_FALSE(ParseHotProfile("zipf:1").ok());
  EXPECT_EQ(ParseHotProfile("powerlaw:1.5")->power, 1.5);
}

}  // namespace
}  // namespace sparrow::tools
