// Every model in ../shared/models against llama.cpp's outputs for it, the trained KJV models
// against llama.cpp's and PowerInfer's, and PowerInfer's sparse files against PowerInfer's: prompt
// logits, the top-k logits of the generated tokens, and the greedy continuation token by token
// (teacher-forced, so a legitimate flip at a near tie does not hide later rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/sampler.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/bundle_convert.h"
#include "tests/util/arch_golden_files.h"
#include "tests/util/golden.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::GoldenFile;

struct Tolerance {
  float rel_logits;    // max |Δ| / max |reference logit| of a row
  float token_margin;  // compare greedy tokens only where llama.cpp's top1 - top2 is at least this
  // Sparse references: a predictor logit within rounding noise of the threshold turns a neuron on
  // in one engine and off in the other, and teacher-forced steps carry that in their KV, so a
  // few compared tokens (at most one in 50, none with a margin of firm_margin or more) may differ.
  float firm_margin = 0;
};

bool IsPowerInfer(const testing::GoldenFile& g) {
  return g.reference.rfind("PowerInfer", 0) == 0;
}

// From ../shared/testdata/README.md, "Tolerances": what the weights' types allow; PowerInfer's
// references from ../shared/pwri/README.md (a neuron whose predictor logit lies within rounding
// noise of the threshold may be chosen by one engine and skipped by the other).
// `converted`: a file converted to neuron bundles, whose K-quant down rows are Q8_0 copies (no
// K-quant row kernel): a second rounding, allowed the README's bound for quantized files.
// `f16_kv`: Sparrow's cache holds f16 where the reference's held f32 ("KV cache type" in the
// README): its bounds for that, 2e-3 on F32 and F16 files and 5e-2 on quantized ones.
Tolerance ToleranceFor(const Model& m, const testing::GoldenFile& g, bool converted, bool f16_kv) {
  bool f16 = false, quant = false;
  for (const auto& t : m.file().tensors()) {
    if (t.type == TensorType::kF16 || t.type == TensorType::kBF16)
      f16 = true;
    else if (t.type != TensorType::kF32 && t.type != TensorType::kI8 && t.type != TensorType::kI32)
      quant = true;  // (i8/i32: the records and neuron ids of a converted file)
  }
  if (IsPowerInfer(g)) return {5e-2f, quant ? 0.25f : 5e-2f, 0.25f};
  if (f16_kv) return quant ? Tolerance{5e-2f, 0.25f} : Tolerance{2e-3f, 2e-2f};
  // The README recommends 5e-2 for quantized files; Sparrow rounds activations as llama.cpp does
  // and stays within 1.2e-2, so a tighter bound catches regressions.
  // The synthetic gemma2 file's tied output multiplies a tiny embedding by an output norm near
  // 50 (tests/golden/arch/README.md), which magnifies the Q8 rounding of activations: the
  // README's bound for quantized files applies (it measured 2.4e-2 on Q4_K_M).
  const bool magnified = m.config().arch->name == "gemma2";
  if (quant) return {converted || magnified ? 5e-2f : 2.5e-2f, 0.25f};
  if (f16) return {2e-3f, 2e-2f};
  return {1e-3f, 1e-3f};
}

float RelDiffAt(const std::vector<float>& ours, const std::vector<int32_t>& ids,
                const std::vector<float>& ref) {
  float max_ref = 0, max_d = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    max_d = std::max(max_d, std::fabs(ours[ids[i]] - ref[i]));
  }
  return max_d / std::max(max_ref, 1e-6f);
}

class GoldenModelTest : public ::testing::TestWithParam<std::string> {};

// `converted`: run the model converted to neuron bundles (sparrow convert) with its neurons in
// reverse order, which must not change what it computes beyond summation order. `cache_share`
// (converted PowerInfer files): the FFN stays on flash behind a neuron cache of that share of
// the bundles (--cache-mb), which must not change it at all.
// `model_path`: the file the golden was made from, when it is not in the shared folder.
// `expert_neurons`: converted with --expert-neurons.
void CheckFile(const std::string& json_path, kernels::ThreadPool* pool, bool converted = false,
               double cache_share = -1, const std::string& model_path = "",
               bool expert_neurons = false, bool f16_kv = false) {
  GoldenFile g = testing::LoadGolden(json_path);
  std::string path = model_path.empty() ? testing::GoldenModelPath(g) : model_path;
  if (path.empty())
    GTEST_SKIP() << g.model_file
                 << " is not shipped in ../shared/models (vectors kept for reference)";
  if (converted) {
    tools::ConvertOptions o;
    o.model = path;
    o.expert_neurons = expert_neurons;
    o.output = testing::TempPath(std::filesystem::path(path).stem().string() + ".bundles.gguf");
    o.order = [](int64_t, int64_t n_ff) {
      std::vector<int32_t> order(n_ff);
      for (int64_t i = 0; i < n_ff; ++i) order[i] = static_cast<int32_t>(n_ff - 1 - i);
      return order;
    };
    auto sum = tools::ConvertToBundles(o);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    path = o.output;
  }
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  ASSERT_EQ(c.n_vocab, g.n_vocab);
  const Tolerance tol = ToleranceFor(**model, g, converted, f16_kv);
  std::unique_ptr<FeedForward> ffn;
  if (cache_share >= 0) {
    SparsityOptions so;
    so.cache_bytes = static_cast<size_t>(
        cache_share * static_cast<double>((*model)->weights().bundles->bundle_bytes()));
    auto plan = MakeSparsePlan(**model, so, pool);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_NE((*plan)->store, nullptr);
    ffn = MakeFeedForward(**model, *plan, pool);
  }
  if (!ffn) ffn = MakeDefaultFeedForward(**model, pool);
  ForwardPass fp(**model, pool, std::move(ffn));

  float worst = 0;
  int compared_tokens = 0, differing_tokens = 0;
  for (size_t pi = 0; pi < g.prompts.size(); ++pi) {
    const auto& p = g.prompts[pi];
    SCOPED_TRACE("prompt " + std::to_string(pi) + " \"" + p.prompt + "\"");
    // The references were made with an f32 cache; f16_kv: llama.cpp's (and sparrowd's) default.
    ContiguousKvCache cache(c.n_layer, 512, c.kv_dim(), f16_kv ? kF16Kv : KvTypes{});
    std::vector<float> logits;
    ASSERT_TRUE(fp.Run(p.prompt_tokens, 0, cache, false, &logits).ok());

    if (!p.last_prompt_logits.empty()) {
      std::vector<int32_t> all(g.n_vocab);
      for (int i = 0; i < g.n_vocab; ++i) all[i] = i;
      const float rel = RelDiffAt(logits, all, p.last_prompt_logits);
      worst = std::max(worst, rel);
      EXPECT_LE(rel, tol.rel_logits) << "full last-prompt logits";
    }
    int64_t pos = static_cast<int64_t>(p.prompt_tokens.size());
    for (size_t s = 0; s < p.generated_tokens.size(); ++s) {
      if (s < p.topk.size()) {
        ASSERT_EQ(p.topk[s].n_past, pos);
        const float rel = RelDiffAt(logits, p.topk[s].ids, p.topk[s].logits);
        worst = std::max(worst, rel);
        EXPECT_LE(rel, tol.rel_logits) << "top-k logits at step " << s;
      }
      const bool comparable =
          p.margins[s] >= tol.token_margin &&
          (tol.token_margin > 1e-3f || static_cast<int>(s) < p.reliable_prefix_len);
      if (comparable) {
        const int32_t ours = ArgMax(logits);
        if (tol.firm_margin > 0 && ours != p.generated_tokens[s]) {
          ++differing_tokens;
          EXPECT_LT(p.margins[s], tol.firm_margin) << "greedy token at step " << s;
        } else {
          EXPECT_EQ(ours, p.generated_tokens[s]) << "greedy token at step " << s;
        }
        ++compared_tokens;
      }
      if (s + 1 == p.generated_tokens.size()) break;
      const int32_t next = p.generated_tokens[s];  // teacher forcing
      ASSERT_TRUE(fp.Run({&next, 1}, pos, cache, false, &logits).ok());
      ++pos;
    }
  }
  // The tokenizer must reproduce the prompt ids, and the generated ids' pieces the exact text.
  auto tok = LoadTokenizer((*model)->file());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  for (const auto& p : g.prompts) {
    EXPECT_EQ((*tok)->Tokenize(p.prompt, /*add_special=*/true), p.prompt_tokens)
        << "prompt \"" << p.prompt << "\"";
    // PowerInfer's 2023 detokenizer spells <unk> as U+2585; compare text with llama.cpp only.
    if (IsPowerInfer(g)) continue;
    std::string text;
    for (int32_t id : p.generated_tokens) text += (*tok)->piece(id);
    EXPECT_EQ(text, p.generated_text_bytes) << "generated text of \"" << p.prompt << "\"";
  }
  std::printf(
      "[golden] %-28s worst rel logit diff %.3g (limit %.3g), %d greedy tokens compared, %d "
      "differ\n",
      g.model_file.c_str(), worst, tol.rel_logits, compared_tokens, differing_tokens);
  EXPECT_LE(differing_tokens * 50, compared_tokens);
  EXPECT_GT(compared_tokens, 40);  // llama-2-tiny-random has many near ties; the rest compare ~200
}

TEST_P(GoldenModelTest, MatchesLlamaCppSingleThread) {
  CheckFile(GetParam(), nullptr);
}

TEST_P(GoldenModelTest, MatchesLlamaCppTwoThreads) {
  kernels::ThreadPool pool(2);
  CheckFile(GetParam(), &pool);
}

// With the default f16 cache, within the README's bounds for it. Not stories260K: its logits
// move 2.16e-3 (llama.cpp's own moved 1.6e-3), past the README's 2e-3, so it is checked with
// the f32 cache only; nor the MoE files of tests/golden/arch, where the f16 cache's rounding
// picks other experts at near ties (0.1-0.4 of the largest logit).
TEST_P(GoldenModelTest, MatchesLlamaCppWithTheDefaultF16Cache) {
  if (GetParam().find("stories260K") != std::string::npos &&
      GetParam().find("stories260K-q") == std::string::npos)
    GTEST_SKIP() << "checked with the f32 cache only (2.16e-3 past the README's 2e-3 at f16)";
  kernels::ThreadPool pool(2);
  CheckFile(GetParam(), &pool, false, -1, "", false, /*f16_kv=*/true);
}

std::vector<std::string> AllGoldenPaths() {
  std::vector<std::string> out;
  for (const char* dir : {"testdata/golden", "kjv/golden", "pwri/golden", "arch/golden"}) {
    for (std::string& p : testing::ListGoldenPaths(dir)) {
      // PowerInfer computes FFNs of at most 1000 neurons (the KJV ReLU model has 768) by its
      // attention-head path, which skips gate/up rows in blocks of 128 by the logit of neuron
      // row/128 and leaves the skipped outputs unwritten: not a computation another engine can
      // reproduce. Those files are checked against Sparrow's own dense ReLU in sparse_ffn_test.
      if (p.find("kjv-relu") != std::string::npos) continue;
      out.push_back(std::move(p));
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllFiles, GoldenModelTest, ::testing::ValuesIn(AllGoldenPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file =
                               std::filesystem::path(info.param).filename().string();
                           std::string n = file.substr(0, file.size() - 5);
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

// The goldens of tests/golden/arch: newer families' synthetic files and quantized variants of
// ../shared/arch's, remade here as each golden says (they are not kept in the repository).
class RepoArchGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RepoArchGoldenTest, MatchesLlamaCpp) {
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFileOrDie(GetParam()));
  const std::string path = testing::TempPath(j.at("model_file").get<std::string>());
  const std::string error = testing::RegenerateArchModel(j, path);
  if (error.rfind("skip: ", 0) == 0) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  kernels::ThreadPool pool(2);
  CheckFile(GetParam(), &pool, false, -1, path);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Repo, RepoArchGoldenTest,
                         ::testing::ValuesIn(testing::RepoArchGoldenPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

// The neuron-bundle layout (sparrow convert, neurons in reverse order), on PowerInfer's files
// (gate rows bundled) and on SwiGLU files of each weight type (gate resident; down as rows,
// K-quant rows as Q8_0).
class ConvertedGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertedGoldenTest, MatchesTheReferenceToo) {
  kernels::ThreadPool pool(2);
  CheckFile(GetParam(), &pool, /*converted=*/true);
}

std::vector<std::string> ConvertedSample() {
  std::vector<std::string> out;
  for (std::string& p : AllGoldenPaths()) {
    const std::string file = std::filesystem::path(p).filename().string();
    for (const char* name : {"pwri-", "stories260K-f32", "stories260K-q4_0", "synth-qwen2-f16",
                             "synth-llama-q4_k_m", "kjv-llama-5m-q8_0", "synth-llama-tied-q6_k"}) {
      if (file.rfind(name, 0) == 0) out.push_back(p);
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sample, ConvertedGoldenTest, ::testing::ValuesIn(ConvertedSample()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

// PowerInfer's files with their FFN on flash (--cache-mb): a cache of a fifth of the bundles,
// half of it the hot segment, so that rows come from all three places (and prompts from whole
// layers read in one pass). SwiGLU files run from flash only sparse, unlike their reference.
class FlashGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FlashGoldenTest, MatchesTheReferenceFromFlash) {
  kernels::ThreadPool pool(2);
  CheckFile(GetParam(), &pool, /*converted=*/true, /*cache_share=*/0.2);
}

std::vector<std::string> PowerInferPaths() {
  std::vector<std::string> out;
  for (std::string& p : AllGoldenPaths()) {
    if (std::filesystem::path(p).filename().string().rfind("pwri-", 0) == 0) out.push_back(p);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(PowerInfer, FlashGoldenTest, ::testing::ValuesIn(PowerInferPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

// A ReGLU mixture of experts (smallthinker) converted to the expert layout, experts in reverse
// order, remade from tests/golden/arch, run from memory and from flash behind a cache of a
// quarter of the experts: as stored (closed neurons' up rows skipped), and with neuron bundles
// inside each expert (their down rows skipped too; the down columns as Q8_0 rows, a second
// rounding). The Q8_0 file is checked as stored only: at its prompt 0, step 6, a router sits so
// near a tie that any change of the down product's rounding flips an expert (F32 rows of the
// exact Q8_0 values moved that step's logits by 0.19 of their range, every other step < 0.02).
class ExpertNeuronGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExpertNeuronGoldenTest, MatchesLlamaCppFromMemoryAndFromFlash) {
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFileOrDie(GetParam()));
  const std::string path = testing::TempPath("experts-" + j.at("model_file").get<std::string>());
  const std::string error = testing::RegenerateArchModel(j, path);
  if (error.rfind("skip: ", 0) == 0) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  kernels::ThreadPool pool(2);
  const bool q8_0 = GetParam().find("q8_0") != std::string::npos;
  for (const bool neurons : {false, true}) {
    if (neurons && q8_0) continue;
    SCOPED_TRACE(neurons ? "neuron bundles" : "experts as stored");
    {
      SCOPED_TRACE("from memory");
      CheckFile(GetParam(), &pool, /*converted=*/true, -1, path, neurons);
    }
    {
      SCOPED_TRACE("from flash");
      CheckFile(GetParam(), &pool, /*converted=*/true, /*cache_share=*/0.25, path, neurons);
    }
  }
  std::remove(path.c_str());
}

std::vector<std::string> ReluExpertGoldenPaths() {
  std::vector<std::string> out;
  for (std::string& p : testing::RepoArchGoldenPaths()) {
    if (p.find("smallthinker") != std::string::npos) out.push_back(std::move(p));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Smallthinker, ExpertNeuronGoldenTest,
                         ::testing::ValuesIn(ReluExpertGoldenPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace sparrow
