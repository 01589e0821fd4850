#pragma once
// PlanInputs: what the planner knows of one model on one device (PowerInfer-2 section 5.2's
// model and hardware inputs): the bytes a decoded token reads, by role and tensor type; the
// neuron bundles and how many are active at each sparsity level; the miss curve P_miss(cache);
// the memory that does not move (resident weights, scratch) and the KV bytes per token; and the
// device's measured rates. A plain value, built once per model and hardware profile; then
// SolvePlan (planner.h) may run on it as often as the budget changes. Thread-compatible.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"
#include "engine/plan/hardware_profile.h"
#include "engine/runtime/kv_cache.h"

namespace sparrow {
class Model;
struct ActivationProfile;
}  // namespace sparrow

namespace sparrow::plan {

// Bytes of weights of one tensor type.
struct TypedBytes {
  TensorType type = TensorType::kF32;
  uint64_t bytes = 0;
};

// A sparsity level the plan may choose: the share of FFN neurons skipped per decoded token.
struct PlanLevel {
  double sparsity = 0;
  double active_share = 1;   // 1 - sparsity (PowerInfer files: their predictor's share)
  bool gather = false;       // active rows are gathered (sparse kernels), not whole matrices
  uint64_t extra_bytes = 0;  // memory the level adds (the transposed down copy of a SwiGLU
                             // model that is not converted)
};

// A neuron-cache size the plan may choose: a share of all bundles, and the share of the neurons
// a token uses that such a cache misses (read from flash).
struct CachePoint {
  double fraction = 0;
  double miss_rate = 1;
};

struct PlanInputs {
  std::string model_name;
  bool powerinfer = false;  // predictor policy: the sparsity level is the file's
  bool converted = false;   // neuron bundles on flash (`sparrow convert`); else all in memory
  int64_t n_layer = 0, n_ff = 0, n_embd = 0;

  // Read whole by every decoded token: attention, output, predictors, and the gate of a SwiGLU
  // model (CATS thresholds every neuron's gate). Summed over layers.
  std::vector<TypedBytes> dense;
  // Rows one active neuron computes, per layer (up and down; gate too in PowerInfer files).
  std::vector<TypedBytes> neuron_rows;
  uint64_t record_bytes = 0;  // one bundle as read from flash (padded record)
  uint64_t bundle_bytes = 0;  // every bundle of every layer (a cache at fraction 1)

  uint64_t resident_bytes = 0;      // weights kept in memory: everything but the bundles
  uint64_t scratch_bytes = 0;       // activations, logits, the store's staging (estimate)
  uint64_t kv_bytes_per_token = 0;  // keys and values of every layer, one position
  int64_t n_ctx = 0;                // the model's training context
  int io_queue_depth = 128;         // reads the store keeps in flight (NeuronStoreOptions)
  // Per token, beyond what the rates predict: the hardware profile's figure when it was measured
  // on this model's file (HardwareProfile::store_token_overhead_seconds), else 0.
  double token_overhead_s = 0;

  std::vector<PlanLevel> levels;  // ascending sparsity
  std::vector<CachePoint> cache;  // ascending fraction; the first is the smallest cache
  std::string miss_curve_source;  // "profile hot-half", "profile lru", "assumed uniform"
  HardwareProfile hw;
};

struct PlanInputsOptions {
  // PowerInfer files: the share of neurons their predictor runs per decoded token (the file does
  // not say; `sparrow bench --json` reports it as active_fraction). Required for them.
  double active_share = 0;
  int io_queue_depth = 128;    // NeuronStoreOptions::queue_depth
  int64_t prompt_chunk = 512;  // tokens of a prompt computed at once (scratch estimate)
  KvTypes kv_types = kF16Kv;   // the KV pool's (sparrowd's default)
};

// Fails when the profile does not fit the model, a PowerInfer file has no active share, or the
// hardware profile lacks what the model needs (flash rates for a converted file); the message
// names the file, flag or field.
Result<PlanInputs> MakePlanInputs(const Model& model, const ActivationProfile* profile,
                                  const HardwareProfile& hw, const PlanInputsOptions& options = {});

// The cache points when no profile has a miss curve: no locality at all (a cache holding a
// share f of the bundles misses 1 - f of any token's neurons), a pessimistic curve.
std::vector<CachePoint> UniformMissCurve();

}  // namespace sparrow::plan
