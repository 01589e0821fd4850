#pragma once
// SparsePlan: how a model's FFN runs sparse, decided once per model and options and shared by
// every ForwardPass: which policy chooses the neurons, the per-layer thresholds, and the down
// projection as one row per neuron (the file's ffn_down_t in PowerInfer files; a transposed copy
// built at load for SwiGLU models). Immutable after MakeSparsePlan but for the level in force and
// the store, which are thread-safe.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/kernels/matmul.h"
#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"
#include "engine/sparse/activation_profile.h"
#include "engine/sparse/neuron_store.h"
#include "engine/sparse/sparsity_level.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

// What a user asks for: a share of FFN neurons to skip per decoded token, resolved to per-layer
// thresholds through a profile (`sparrow profile`). 0 is dense.
struct SparsityOptions {
  double sparsity = 0;
  std::string profile_path;
  ThresholdMethod method = ThresholdMethod::kCats;
  // Type of the transposed down copy; unset: TransposedDownType's choice.
  std::optional<TensorType> down_type;
  // Prompt tokens run sparse too, as if each were decoded (perplexity under sparsity).
  bool sparse_prompts = false;
  // Steps of up to this many decoded tokens (and no prompt tokens) gather each token's rows;
  // larger ones go by whole matrices, masked. Measured (bench/RESULTS.md): at 50% sparsity the
  // masked whole-matrix step is faster from two sequences on, so only a lone token gathers.
  int64_t gather_max_tokens = 1;
  // Steps with at least this many sparse tokens (of a model with ffn_down) take the down
  // projection of their masked activations through the whole matrix, one GEMM with the dense
  // tokens, instead of accumulating each token's rows: the same neurons, summed in another order
  // (a token's bits then depend on its batch). 0: never. Measured in bench/RESULTS.md.
  int64_t dense_down_min_tokens = 2;
  // A converted file's FFN rows stay on flash, read into a neuron cache of this many bytes
  // (--cache-mb); unset: the whole file is mapped. `store` tunes the cache (its cache_bytes is
  // this value).
  std::optional<size_t> cache_bytes;
  NeuronStoreOptions store;
};

// kExperts: a mixture-of-experts model whose experts the router chooses and the store serves.
enum class SparsePolicy { kPredictor, kCats, kTealDown, kExperts };
// "predictor", "cats", "teal-down", "experts"
std::string_view SparsePolicyName(SparsePolicy p);

struct SparsePlan {
  SparsePolicy policy = SparsePolicy::kPredictor;
  double target_sparsity = 0;         // threshold policies: what was asked for
  bool sparse_prompts = false;        // every token runs sparse, not only decoded ones (perplexity)
  int64_t gather_max_tokens = 1;      // see SparsityOptions
  int64_t dense_down_min_tokens = 2;  // see SparsityOptions
  // Threshold policies: the per-layer thresholds of each level this plan may switch to and the
  // one in force (the memory plan moves it between steps). Shared, not immutable, like `store`.
  std::shared_ptr<SparsityLevel> levels;
  std::vector<kernels::WeightMatrix> down_t;  // per layer: one row of n_embd per neuron
  // Predictor policy: per layer fc1/fc2 (the file's, or the profile's in F32) and bias (empty
  // for PowerInfer files); a neuron runs when its logit >= predictor_threshold.
  std::vector<kernels::WeightMatrix> pred_fc1, pred_fc2;
  std::vector<std::vector<float>> pred_bias;
  float predictor_threshold = 0;
  bool predictor_reads_normed = false;  // profile predictors read the FFN-normed input
  // PowerInfer's semantics: prompt tokens are masked by the predictor too (its golden outputs
  // are made so). Otherwise prompt tokens run dense.
  bool mask_prompts = false;
  // Where the FFN rows come from under --cache-mb (null: the mapping). Shared, not immutable:
  // its Resize and stats are thread-safe, its reads belong to the step in flight.
  std::shared_ptr<NeuronStore> store;
  std::vector<std::vector<uint8_t>> owned;           // the transposed copies down_t points into
  std::vector<std::vector<float>> owned_predictors;  // profile predictors' fc1, fc2 per layer
  size_t owned_bytes() const;
};

// Null (with an OK status) when the model runs dense: an ordinary GGUF at sparsity 0. PowerInfer
// files always get the predictor plan, and take no --sparsity. Errors name the flag or file.
Result<std::shared_ptr<const SparsePlan>> MakeSparsePlan(const Model& model,
                                                         const SparsityOptions& options,
                                                         kernels::ThreadPool* pool);

// The FFN for a plan: DenseFfn when null, SparseFfn otherwise. Both must outlive the result.
std::unique_ptr<FeedForward> MakeFeedForward(const Model& model,
                                             std::shared_ptr<const SparsePlan> plan,
                                             kernels::ThreadPool* pool);

// The tensor type of the transposed down copy built for a SwiGLU model whose ffn_down is `type`:
// float types, Q4_0 and Q8_0 are kept (same bytes per token as the original, so sparsity saves
// what it skips; bench/RESULTS.md has the perplexity of requantizing); the other types, whose
// rows have no accumulation kernel (K-quants, Q4_1, Q5_0, Q5_1), become Q8_0; F16 where n_embd is
// not a multiple of 32. PowerInfer files' K-quant ffn_down_t gets the same Q8_0 copy.
TensorType TransposedDownType(TensorType type, int64_t n_embd);

// Layer `l`'s down projection as one row of n_embd per neuron, in `type` or, unset, in a type the
// sparse kernels accumulate directly: the file's rows (ffn_down_t of PowerInfer and bundled
// files) when they already are one, else a copy made into `owned` (transposed from ffn_down, or
// requantized: TransposedDownType's choice).
kernels::WeightMatrix DownRows(const ModelConfig& c, const LayerWeights& l,
                               std::optional<TensorType> type, std::vector<uint8_t>& owned);
// The type DownRows gives when none is asked for.
TensorType DownRowsType(const ModelConfig& c, const LayerWeights& l);

// A down matrix (rows of n_ff) as one row of its `rows` values per column, in `type`.
std::vector<uint8_t> TransposeDown(const kernels::WeightMatrix& down, TensorType type);

}  // namespace sparrow
