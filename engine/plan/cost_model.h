#pragma once
// The cost model of one decoded token (PowerInfer-2 section 5.3, adapted to this engine), as
// plain functions of PlanInputs and one choice. The planner tabulates them for Z3; reports use
// them to break a plan's time down. Pure functions; thread-safe.
//
// Per decoded token, with t compute threads, cache point c and sparsity level s:
//   T_token = D(t) + n_layer * max(C(t, s), F(c, s) + P_miss(c) * C(t, s))    (eq. 1-2, 6-10)
//   D(t)    = sum over the weights read whole (attention, output, predictors, the gate a
//             SwiGLU model thresholds) of bytes / R_dense(type, t), + O: what the store probe
//             measured this model's file take per token beyond the rates' prediction (at the
//             profile's most threads; 0 for another file)
//   C(t, s) = active(s) * n_ff * (sum over an active neuron's rows of bytes / R_gather(type, t)
//             + S for a converted model: the store's measured cost per neuron)
//             (whole matrices at R_dense for the dense level)
//   F(c, s) = m * read_bytes / B_flash(read_bytes, clamp(m, 1, depth)),
//             m = active(s) * n_ff * P_miss(c) misses per layer
// R are the hardware profile's measured bytes of weights per second (memory traffic is inside
// them: the probe's matrices are far larger than the caches, which is the paper's eq. 11 folded
// into eq. 7-9); read_bytes is a record rounded up to the 4 KiB an O_DIRECT read moves at least
// (misses are scattered, each a read of its own); B_flash is the flash rate at that size and the
// store's queue depth. Overlap (the neuron-cluster pipeline, engine/sparse/README.md): the rows
// in memory, C * (1 - P_miss), are computed while the misses are read; the missed rows once they
// land (the down accumulation waits for the last), so a layer's FFN costs
// max(C (1 - P_miss), F) + C P_miss. Attention and the predictor never overlap the reads (a
// layer's reads start after its predictor has run on the layer's attention output). The paper's
// eq. 2 overlaps all FFN compute with I/O; bench/RESULTS.md (session 13) measured how little of
// it this engine can hide. The miss curve was measured at one level; it is used at every level
// (fewer active neurons would miss less: the model errs slow).
//   Memory = resident weights + neuron cache (fraction(c) * all bundles) + level extra
//            + KV pool + scratch
#include <cstdint>

#include "engine/plan/plan_inputs.h"

namespace sparrow::plan {

inline constexpr uint64_t kReadAlign = 4096;
// Bytes one miss reads from flash: its record, rounded up to whole 4 KiB blocks.
uint64_t ReadBytes(const PlanInputs& in);

// Seconds per token of the weights read whole.
double DenseSeconds(const PlanInputs& in, int threads, const PlanLevel& level);
// Seconds per layer computing the active neurons' rows.
double FfnComputeSeconds(const PlanInputs& in, int threads, const PlanLevel& level);
// Seconds per layer reading the misses from flash (0 for a model not converted).
double FlashSeconds(const PlanInputs& in, const CachePoint& cache, const PlanLevel& level);
// Bytes read from flash per token.
double FlashBytesPerToken(const PlanInputs& in, const CachePoint& cache, const PlanLevel& level);

uint64_t CacheBytes(const PlanInputs& in, const CachePoint& cache);
// Resident weights and scratch: what no choice moves.
uint64_t FixedBytes(const PlanInputs& in);

struct TokenCost {
  double dense_s = 0, ffn_compute_s = 0, flash_s = 0;  // the last two summed over layers
  double token_s = 0;                                  // T_token
  double flash_bytes = 0;
  uint64_t memory_bytes = 0;
};
TokenCost Evaluate(const PlanInputs& in, int threads, const CachePoint& cache,
                   const PlanLevel& level, uint64_t kv_bytes);

}  // namespace sparrow::plan
