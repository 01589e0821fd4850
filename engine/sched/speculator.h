#pragma once
// Speculator: the drafts of a step's decoding sequences, each on its own: a request's predicted
// output first (OpenAI's `prediction`), else the server's drafter: prompt lookup (ngram) or the
// draft model (ModelDrafter, every drafting sequence in the same batched passes). The planner
// calls it from FormBatch (PlannerOptions::propose) with each sequence's room set.
// Not thread-safe: the scheduler thread owns it.
#include <memory>
#include <span>
#include <vector>

#include "engine/sched/sequence.h"
#include "engine/spec/model_drafter.h"
#include "engine/spec/spec_options.h"

namespace sparrow {

class Speculator {
 public:
  // With SpecType::kDraft, options.draft_model must be set (and outlive this).
  Speculator(const SpecOptions& options, kernels::ThreadPool* pool, int64_t n_ctx,
             int64_t max_running, int64_t block_size);

  // Fills seq->spec.draft (at most spec.max_draft tokens) and spec.source for each sequence.
  void Propose(std::span<Sequence* const> seqs);

  // The draft model's KV pool (0 without one).
  int64_t kv_bytes() const { return drafter_ ? drafter_->kv_bytes() : 0; }

 private:
  SpecOptions opts_;
  std::unique_ptr<ModelDrafter> drafter_;
  std::vector<ModelDrafter::Job> jobs_;
};

}  // namespace sparrow
