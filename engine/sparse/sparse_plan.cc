#include "engine/sparse/sparse_plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/common/check.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/sparse_ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"
#include "engine/runtime/dense_ffn.h"
#include "engine/runtime/moe_ffn.h"
#include "engine/sparse/expert_store_source.h"
#include "engine/sparse/sparse_ffn.h"

namespace sparrow {
namespace {

// Rows of `w` converted to `type` (the same layout: one row per neuron).
std::vector<uint8_t> Requantize(const kernels::WeightMatrix& w, TensorType type) {
  const size_t row_bytes = kernels::RowBytes(type, w.cols);
  std::vector<uint8_t> out(row_bytes * w.rows);
  std::vector<float> row(w.cols);
  for (int64_t r = 0; r < w.rows; ++r) {
    kernels::DequantizeRow(w.type, static_cast<const uint8_t*>(w.data) + r * w.row_stride_bytes,
                           row.data(), w.cols);
    kernels::QuantizeRow(type, row.data(), &out[r * row_bytes], w.cols);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> TransposeDown(const kernels::WeightMatrix& down, TensorType type) {
  const int64_t rows = down.rows, cols = down.cols;  // n_embd, n_ff
  std::vector<float> full(rows * cols), row(rows);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::DequantizeRow(down.type,
                           static_cast<const uint8_t*>(down.data) + r * down.row_stride_bytes,
                           &full[r * cols], cols);
  }
  const size_t row_bytes = kernels::RowBytes(type, rows);
  std::vector<uint8_t> out(row_bytes * cols);
  for (int64_t i = 0; i < cols; ++i) {
    for (int64_t r = 0; r < rows; ++r) row[r] = full[r * cols + i];
    kernels::QuantizeRow(type, row.data(), &out[i * row_bytes], rows);
  }
  return out;
}

std::string_view SparsePolicyName(SparsePolicy p) {
  switch (p) {
    case SparsePolicy::kPredictor:
      return "predictor";
    case SparsePolicy::kCats:
      return "cats";
    case SparsePolicy::kTealDown:
      return "teal-down";
    case SparsePolicy::kExperts:
      return "experts";
  }
  return "?";
}

size_t SparsePlan::owned_bytes() const {
  size_t n = 0;
  for (const auto& v : owned) n += v.size();
  return n;
}

TensorType TransposedDownType(TensorType type, int64_t n_embd) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return type;
    case TensorType::kQ4_0:
    case TensorType::kQ8_0:
      return n_embd % 32 == 0 ? type : TensorType::kF16;
    default:  // types without a row-accumulation kernel (kernels::AccumulatesRows)
      return n_embd % 32 == 0 ? TensorType::kQ8_0 : TensorType::kF16;
  }
}

TensorType DownRowsType(const ModelConfig& c, const LayerWeights& l) {
  if (l.ffn_down_t.data != nullptr && kernels::AccumulatesRows(l.ffn_down_t.type)) {
    return l.ffn_down_t.type;
  }
  return TransposedDownType(l.ffn_down_t.data ? l.ffn_down_t.type : l.ffn_down.type, c.n_embd);
}

kernels::WeightMatrix DownRows(const ModelConfig& c, const LayerWeights& l,
                               std::optional<TensorType> type, std::vector<uint8_t>& owned) {
  const TensorType want = type.value_or(DownRowsType(c, l));
  if (l.ffn_down_t.data != nullptr) {
    if (want == l.ffn_down_t.type) return l.ffn_down_t;
    // K-quant rows (a Q4_K_M file): a copy in TransposedDownType's choice (Q8_0), read in place
    // of the file's rows, whose pages are then never touched.
    owned = Requantize(l.ffn_down_t, want);
    return {want, owned.data(), c.n_embd, c.n_ff, kernels::RowBytes(want, c.n_embd)};
  }
  owned = TransposeDown(l.ffn_down, want);
  return {want, owned.data(), c.n_embd, c.n_ff, kernels::RowBytes(want, c.n_embd)};
}

namespace {

Result<std::shared_ptr<const SparsePlan>> MakeInMemoryPlan(const Model& model,
                                                           const SparsityOptions& o,
                                                           kernels::ThreadPool* pool);

// A mixture-of-experts model: dense experts from memory (null plan), or under --cache-mb from a
// file of expert bundles through the store.
Result<std::shared_ptr<const SparsePlan>> MakeExpertPlan(const Model& model,
                                                         const SparsityOptions& o) {
  const ModelConfig& c = model.config();
  if (o.sparsity > 0) {
    return Unsupported(
        "--sparsity inside the experts of a mixture-of-experts model such as this '" +
        std::string(c.arch->name) +
        "' file is not supported yet; the router already runs n_expert_used of " +
        std::to_string(c.n_expert) + " experts per token");
  }
  if (!o.cache_bytes) return std::shared_ptr<const SparsePlan>();
  const auto& bundles = model.weights().bundles;
  if (!bundles || !bundles->experts) {
    return InvalidArgument(
        "--cache-mb keeps a mixture-of-experts model's experts on flash, which "
        "needs a file converted to expert bundles; " +
        model.file().path() +
        " is not: sparrow convert -m MODEL -o MODEL.sparrow.gguf "
        "[--calibrate TEXT]");
  }
  auto plan = std::make_shared<SparsePlan>();
  plan->policy = SparsePolicy::kExperts;
  NeuronStoreOptions so = o.store;
  so.cache_bytes = *o.cache_bytes;
  SPARROW_ASSIGN_OR_RETURN(auto store, NeuronStore::Open(model, so));
  plan->store = std::move(store);
  return std::shared_ptr<const SparsePlan>(std::move(plan));
}

}  // namespace

Result<std::shared_ptr<const SparsePlan>> MakeSparsePlan(const Model& model,
                                                         const SparsityOptions& o,
                                                         kernels::ThreadPool* pool) {
  if (model.config().n_expert > 0) return MakeExpertPlan(model, o);
  if (!o.cache_bytes) return MakeInMemoryPlan(model, o, pool);
  const ModelConfig& c = model.config();
  if (!model.weights().bundles) {
    return InvalidArgument("--cache-mb needs a model converted to neuron bundles, which " +
                           model.file().path() +
                           " is not: sparrow convert -m MODEL -o MODEL.sparrow.gguf [--profile P]");
  }
  if (!c.powerinfer && o.sparsity == 0) {
    spdlog::warn(
        "--cache-mb without --sparsity: every neuron of this SwiGLU model is read through the "
        "neuron cache on every token (it runs in the memory given, at flash's speed); "
        "--sparsity and --profile read only the active ones");
  }
  if (o.method == ThresholdMethod::kTealDown && !c.powerinfer) {
    return InvalidArgument(
        "--sparsity-method teal-down computes every neuron's up row, which --cache-mb would "
        "read from flash on every token: use cats or predictor");
  }
  if (o.down_type) {
    return InvalidArgument(
        "--sparse-down-type does not apply to --cache-mb: the file's rows are "
        "read as they are");
  }
  SPARROW_ASSIGN_OR_RETURN(std::shared_ptr<const SparsePlan> in_memory,
                           MakeInMemoryPlan(model, o, pool));
  auto plan = std::make_shared<SparsePlan>(*in_memory);
  for (const auto& owned : plan->owned) {
    // A converted file's down rows are read as they are (convert chose their type).
    SPARROW_CHECK(owned.empty());
  }
  NeuronStoreOptions so = o.store;
  so.cache_bytes = *o.cache_bytes;
  SPARROW_ASSIGN_OR_RETURN(auto store, NeuronStore::Open(model, so));
  plan->store = std::move(store);
  return std::shared_ptr<const SparsePlan>(std::move(plan));
}

namespace {

Result<std::shared_ptr<const SparsePlan>> MakeInMemoryPlan(const Model& model,
                                                           const SparsityOptions& o,
                                                           kernels::ThreadPool* pool) {
  const ModelConfig& c = model.config();
  if (!(o.sparsity >= 0 && o.sparsity < 1)) {
    return InvalidArgument("--sparsity " + std::to_string(o.sparsity) + " must be in [0, 1)");
  }
  auto plan = std::make_shared<SparsePlan>();
  if (c.powerinfer) {
    if (o.sparsity > 0) {
      return InvalidArgument(
          "--sparsity applies to SwiGLU models; this PowerInfer file chooses its neurons by its "
          "own predictors");
    }
    const auto& layers = model.weights().layers;
    plan->owned.resize(layers.size());
    for (size_t il = 0; il < layers.size(); ++il) {
      const LayerWeights& l = layers[il];
      plan->down_t.push_back(DownRows(c, l, std::nullopt, plan->owned[il]));
      plan->pred_fc1.push_back(l.pred_fc1);
      plan->pred_fc2.push_back(l.pred_fc2);
      plan->pred_bias.emplace_back();
    }
    plan->predictor_threshold = c.sparse_threshold;
    plan->mask_prompts = true;
    plan->sparse_prompts = o.sparse_prompts;  // counted as decoded (perplexity)
    plan->gather_max_tokens = o.gather_max_tokens;
    plan->dense_down_min_tokens = o.dense_down_min_tokens;
    return std::shared_ptr<const SparsePlan>(std::move(plan));
  }
  if (o.sparsity == 0 && !o.cache_bytes) return std::shared_ptr<const SparsePlan>();
  if (c.ffn_kind != FfnKind::kSwiGlu && c.ffn_kind != FfnKind::kGeGlu) {
    return Unsupported(
        "--sparsity needs a SwiGLU or GeGLU model; this one's FFN is ReLU-gated without "
        "predictors");
  }
  if (o.down_type) {
    const auto traits = GetTensorTypeTraits(*o.down_type);
    if (!traits || !kernels::CanQuantize(*o.down_type) || !kernels::HasVecDot(*o.down_type) ||
        c.n_embd % traits->block_elems != 0) {
      return InvalidArgument("the down copy's type " + std::string(TensorTypeName(*o.down_type)) +
                             " cannot hold rows of " + std::to_string(c.n_embd));
    }
  }
  if (o.sparsity == 0) {
    // On flash with nothing skipped: CATS at thresholds of 0 takes every neuron, so the FFN's
    // rows come through the neuron cache (the layer read whole) and the model runs in the
    // memory it was given.
    plan->levels = std::make_shared<SparsityLevel>(
        std::vector<ThresholdLevel>{{0, std::vector<float>(static_cast<size_t>(c.n_layer), 0.0f)}},
        0);
    plan->policy = SparsePolicy::kCats;
  } else {
    if (o.profile_path.empty()) {
      return InvalidArgument(
          "--sparsity needs the model's activation profile: make one with `sparrow profile -m "
          "MODEL -f TEXT -o PROFILE` and pass --profile PROFILE");
    }
    SPARROW_ASSIGN_OR_RETURN(ActivationProfile profile, ReadActivationProfile(o.profile_path, &c));
    if (o.method == ThresholdMethod::kPredictor) {
      if (profile.predictors.empty()) {
        return InvalidArgument("--sparsity-method predictor needs a profile with a predictor: " +
                               o.profile_path + " has none (sparrow profile --train-predictor)");
      }
      // The predictor was trained for one level; --sparsity only has to be given (not 0).
      plan->policy = SparsePolicy::kPredictor;
      plan->predictor_reads_normed = true;
      // A converted file numbers its neurons in record order; the profile's in the source's.
      if (const auto& bundles = model.weights().bundles) {
        for (int64_t il = 0; il < c.n_layer; ++il) {
          auto& lp = profile.predictors[il];
          const std::vector<int32_t>& ids = bundles->layers[il].neuron_ids;
          std::vector<float> fc2(lp.fc2.size()), bias(lp.bias.size());
          for (int64_t k = 0; k < c.n_ff; ++k) {
            std::copy_n(&lp.fc2[ids[k] * lp.rank], lp.rank, &fc2[k * lp.rank]);
            bias[k] = lp.bias[ids[k]];
          }
          lp.fc2 = std::move(fc2);
          lp.bias = std::move(bias);
        }
      }
      for (auto& lp : profile.predictors) {
        plan->owned_predictors.push_back(std::move(lp.fc1));
        const auto& fc1 = plan->owned_predictors.back();
        plan->pred_fc1.push_back({TensorType::kF32, fc1.data(), c.n_embd, lp.rank,
                                  static_cast<size_t>(c.n_embd) * sizeof(float)});
        plan->owned_predictors.push_back(std::move(lp.fc2));
        const auto& fc2 = plan->owned_predictors.back();
        plan->pred_fc2.push_back({TensorType::kF32, fc2.data(), lp.rank, c.n_ff,
                                  static_cast<size_t>(lp.rank) * sizeof(float)});
        plan->pred_bias.push_back(std::move(lp.bias));
      }
    } else {
      // Dense stays open to a plan unless the FFN is on flash, where it would read every neuron.
      SPARROW_ASSIGN_OR_RETURN(plan->levels,
                               MakeSparsityLevel(profile, o.method, o.sparsity, !o.cache_bytes));
      plan->policy =
          o.method == ThresholdMethod::kCats ? SparsePolicy::kCats : SparsePolicy::kTealDown;
    }
  }
  plan->target_sparsity = o.sparsity;
  plan->gather_max_tokens = o.gather_max_tokens;
  plan->dense_down_min_tokens = o.dense_down_min_tokens;
  plan->sparse_prompts = o.sparse_prompts;

  const auto& layers = model.weights().layers;
  plan->owned.resize(layers.size());
  plan->down_t.resize(layers.size());
  auto build = [&](int64_t il, int) {
    plan->down_t[il] = DownRows(c, layers[il], o.down_type, plan->owned[il]);
  };
  if (pool) {
    pool->ParallelFor(static_cast<int64_t>(layers.size()), build);
  } else {
    for (int64_t il = 0; il < static_cast<int64_t>(layers.size()); ++il) build(il, 0);
  }
  return std::shared_ptr<const SparsePlan>(std::move(plan));
}

}  // namespace

std::unique_ptr<FeedForward> MakeFeedForward(const Model& model,
                                             std::shared_ptr<const SparsePlan> plan,
                                             kernels::ThreadPool* pool) {
  if (model.config().n_expert > 0) {
    std::unique_ptr<ExpertSource> source;
    if (plan && plan->store) source = std::make_unique<StoreExpertSource>(plan->store);
    return std::make_unique<MoeFfn>(model, pool, std::move(source));
  }
  if (!plan) return std::make_unique<DenseFfn>(model, pool);
  return std::make_unique<SparseFfn>(model, std::move(plan), pool);
}

}  // namespace sparrow
