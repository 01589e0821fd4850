#pragma once
// ModelDrafter: a small model of the target's vocabulary proposes each sequence's next tokens,
// greedily (its argmax), for every drafting sequence in the same batched passes of the draft
// model: one pass catches each sequence up with the tokens it has not seen, then one pass per
// further draft token. Each sequence has its own paged KV in the drafter's own pool (DraftKv);
// after a verification it keeps only the positions the target accepted.
// Memory: the pool holds max_running contexts of the draft model's KV (its bytes:
// kv_bytes()), a pass at most max_running * kCatchUpChunk tokens of scratch.
// Not thread-safe: the scheduler thread owns it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/common/status.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/kv/sequence_kv.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

// One sequence's state in the draft model: its KV and how many of its tokens it holds.
struct DraftKv {
  std::unique_ptr<SequenceKv> kv;
  int64_t n_computed = 0;
  // The target kept positions [0, n_valid) of the sequence: the draft model's KV past them held
  // rejected drafts.
  void Keep(int64_t n_valid);
  void Reset();
};

class ModelDrafter {
 public:
  // A sequence further behind than this catches up over several steps without drafting, so
  // that one pass stays bounded after a long prompt.
  static constexpr int64_t kCatchUpChunk = 256;

  // `draft` and `pool` (may be null) must outlive the drafter.
  // Drafting stops at a token the draft model gives less than `p_min`.
  ModelDrafter(const Model& draft, kernels::ThreadPool* pool, int64_t n_ctx, int64_t max_running,
               int64_t block_size, double p_min);

  struct Job {
    std::span<const int32_t> tokens;  // the sequence: prompt and answer so far
    DraftKv* state = nullptr;
    int64_t max = 0;                      // tokens to propose at most
    std::vector<int32_t>* out = nullptr;  // receives the draft (cleared first)
  };
  // Drafts for every job. A job whose KV does not fit in the pool now, or that is still
  // catching up, gets an empty draft; an error of the draft model's pass is returned (the
  // drafts are then empty and the caller decodes without them).
  Status Propose(std::span<Job> jobs);

  int64_t kv_bytes() const;

 private:
  // Appends the row's most likely token to `out` when the draft model is sure enough of it.
  bool Extend(std::span<const float> row, std::vector<int32_t>* out) const;

  const Model& model_;
  double p_min_;
  ForwardPass fp_;
  KvBlockPool kv_;
  std::vector<float> logits_;
};

}  // namespace sparrow
