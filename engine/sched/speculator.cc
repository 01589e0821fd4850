#include "engine/sched/speculator.h"

#include <spdlog/spdlog.h>

#include "engine/common/check.h"
#include "engine/spec/ngram_draft.h"

namespace sparrow {

Speculator::Speculator(const SpecOptions& options, kernels::ThreadPool* pool, int64_t n_ctx,
                       int64_t max_running, int64_t block_size)
    : opts_(options) {
  if (opts_.type == SpecType::kDraft) {
    SPARROW_CHECK(opts_.draft_model != nullptr);
    drafter_ = std::make_unique<ModelDrafter>(*opts_.draft_model, pool, n_ctx, max_running,
                                              block_size, opts_.draft_p_min);
  }
}

void Speculator::Propose(std::span<Sequence* const> seqs) {
  jobs_.clear();
  for (Sequence* s : seqs) {
    SpecState& sp = s->spec;
    sp.draft.clear();
    if (!s->req.prediction.empty()) {
      const std::span<const int32_t> generated =
          std::span<const int32_t>(s->tokens).subspan(static_cast<size_t>(s->n_prompt));
      sp.draft = PredictionDraft(generated, s->req.prediction, sp.max_draft, &sp.prediction_next,
                                 &sp.prediction_at);
      sp.source = DraftSource::kPrediction;
      if (!sp.draft.empty()) continue;
    }
    if (opts_.type == SpecType::kNgram) {
      sp.draft = PromptLookupDraft(s->tokens, sp.max_draft);
      sp.source = DraftSource::kNgram;
    } else if (opts_.type == SpecType::kDraft) {
      sp.source = DraftSource::kModel;
      jobs_.push_back({s->tokens, &sp.draft_kv, sp.max_draft, &sp.draft});
    }
  }
  if (jobs_.empty()) return;
  if (Status st = drafter_->Propose(jobs_); !st.ok()) {
    // The target decodes without drafts; nothing is lost but time.
    spdlog::warn("the draft model failed, decoding without drafts this step: {}", st.ToString());
  }
}

}  // namespace sparrow
