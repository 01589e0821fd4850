#include "engine/spec/model_drafter.h"

#include <algorithm>
#include <cmath>

#include "engine/runtime/sampler.h"
#include "engine/sparse/ffn_factory.h"

namespace sparrow {

void DraftKv::Keep(int64_t n_valid) {
  n_computed = std::min(n_computed, n_valid);
  if (kv) kv->Truncate(n_computed);
}

void DraftKv::Reset() {
  kv.reset();
  n_computed = 0;
}

ModelDrafter::ModelDrafter(const Model& draft, kernels::ThreadPool* pool, int64_t n_ctx,
                           int64_t max_running, int64_t block_size, double p_min)
    : model_(draft),
      p_min_(p_min),
      fp_(draft, pool, MakeDefaultFeedForward(draft, pool)),
      kv_(draft.config().n_layer, draft.config().kv_dim(), block_size,
          std::max<int64_t>(1, max_running) * ((n_ctx + block_size - 1) / block_size), kF16Kv) {}

int64_t ModelDrafter::kv_bytes() const {
  return kv_.n_blocks() * KvBlockPool::BlockBytes(model_.config().n_layer, model_.config().kv_dim(),
                                                  kv_.block_size(), kv_.types());
}

bool ModelDrafter::Extend(std::span<const float> row, std::vector<int32_t>* out) const {
  const int32_t top = ArgMax(row);
  // Its softmax probability: 1 / sum(exp(l - l_top)).
  double sum = 0;
  for (float l : row) sum += std::exp(static_cast<double>(l - row[top]));
  if (1.0 / sum < p_min_) return false;
  out->push_back(top);
  return true;
}

Status ModelDrafter::Propose(std::span<Job> jobs) {
  // Each segment's job; `drafts` false for a sequence only catching up this step.
  struct Pending {
    Job* job;
    bool drafts;
  };
  std::vector<Pending> pending;
  std::vector<ForwardPass::Segment> segs;
  for (Job& j : jobs) {
    j.out->clear();
    if (j.max <= 0) continue;
    DraftKv& st = *j.state;
    if (!st.kv) st.kv = std::make_unique<SequenceKv>(&kv_);
    const auto n = static_cast<int64_t>(j.tokens.size());
    st.Keep(n - 1);  // a step that was abandoned left drafts past the last token
    const int64_t behind = n - st.n_computed;
    const int64_t chunk = std::min(behind, kCatchUpChunk);
    const bool drafts = chunk == behind;
    // Positions written: the tokens not seen yet, then all but the last draft.
    if (!st.kv->Reserve(st.n_computed + chunk + (drafts ? j.max - 1 : 0), st.n_computed)) {
      continue;
    }
    segs.push_back({st.kv.get(), j.tokens.subspan(st.n_computed, chunk), st.n_computed, false});
    pending.push_back({&j, drafts});
    if (drafts) j.out->reserve(j.max);  // the passes below read the drafts in place
  }
  if (segs.empty()) return Status::Ok();
  SPARROW_RETURN_IF_ERROR(fp_.RunBatch(segs, &logits_));
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  auto row = [&](size_t i) { return std::span<const float>(&logits_[i * n_vocab], n_vocab); };
  std::vector<Job*> drafting;
  for (size_t i = 0; i < pending.size(); ++i) {
    Job& j = *pending[i].job;
    j.state->n_computed += static_cast<int64_t>(segs[i].tokens.size());
    if (pending[i].drafts && Extend(row(i), j.out)) drafting.push_back(&j);
  }
  // One pass per further token, each sequence feeding its last draft.
  while (true) {
    std::erase_if(drafting,
                  [](const Job* j) { return static_cast<int64_t>(j->out->size()) >= j->max; });
    if (drafting.empty()) break;
    segs.clear();
    for (Job* j : drafting) {
      segs.push_back({j->state->kv.get(), {&j->out->back(), 1}, j->state->n_computed, false});
    }
    if (Status s = fp_.RunBatch(segs, &logits_); !s.ok()) {
      for (Job& j : jobs) j.out->clear();
      return s;
    }
    std::vector<Job*> sure;
    for (size_t i = 0; i < drafting.size(); ++i) {
      ++drafting[i]->state->n_computed;
      if (Extend(row(i), drafting[i]->out)) sure.push_back(drafting[i]);
    }
    drafting = std::move(sure);
  }
  return Status::Ok();
}

}  // namespace sparrow
