#include "engine/tools/predictor_frequency.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sparse/sparse_ffn.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tools/calibration_run.h"

namespace sparrow::tools {
namespace {

// Counts each neuron's choices and keeps every token's, in order, for the replay.
class ChoiceRecorder : public NeuronChoiceObserver {
 public:
  ChoiceRecorder(int64_t n_layer, int64_t n_ff)
      : n_ff_(n_ff), counts_(static_cast<size_t>(n_layer * n_ff), 0), trace_(n_layer, n_ff) {}
  void OnChosen(int64_t il, const int32_t* neurons, int64_t n) override {
    for (int64_t k = 0; k < n; ++k) ++counts_[il * n_ff_ + neurons[k]];
    trace_.Append(il, {neurons, static_cast<size_t>(n)});
  }
  const int64_t* layer(int64_t il) const { return &counts_[il * n_ff_]; }
  int64_t chosen() const { return std::accumulate(counts_.begin(), counts_.end(), int64_t{0}); }
  const NeuronTrace& trace() const { return trace_; }

 private:
  int64_t n_ff_;
  std::vector<int64_t> counts_;
  NeuronTrace trace_;
};

}  // namespace

Result<PredictorCalibration> CalibrateByPredictor(const std::string& model_path,
                                                  const std::string& text_file, int64_t max_tokens,
                                                  int threads, size_t record_bytes) {
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(model_path));
  const ModelConfig& c = model->config();
  if (!c.powerinfer) {
    return InvalidArgument(model_path +
                           ": --calibrate measures a PowerInfer file's predictor; order a SwiGLU "
                           "model's neurons with --profile (sparrow profile)");
  }
  SPARROW_ASSIGN_OR_RETURN(std::vector<int32_t> tokens,
                           CalibrationTokens(*model, text_file, max_tokens));

  kernels::ThreadPool pool(std::max(1, threads));
  SPARROW_ASSIGN_OR_RETURN(auto plan, MakeSparsePlan(*model, SparsityOptions{}, &pool));
  auto ffn = std::make_unique<SparseFfn>(*model, plan, &pool);
  ChoiceRecorder counter(c.n_layer, c.n_ff);
  ffn->set_choice_observer(&counter);
  ForwardPass fp(*model, &pool, std::move(ffn));
  // The predictor masks prompt tokens as it masks decoded ones.
  SPARROW_RETURN_IF_ERROR(RunCalibrationWindows(*model, fp, tokens));
  PredictorCalibration out;
  out.orders.assign(c.n_layer, std::vector<int32_t>(c.n_ff));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    std::vector<int32_t>& order = out.orders[il];
    std::iota(order.begin(), order.end(), 0);
    const int64_t* f = counter.layer(il);
    std::stable_sort(order.begin(), order.end(), [f](int32_t a, int32_t b) { return f[a] > f[b]; });
  }
  const NeuronTrace& trace = counter.trace();
  if (trace.tokens() > 0) {
    out.active_share = static_cast<double>(counter.chosen()) /
                       static_cast<double>(trace.tokens() * c.n_layer * c.n_ff);
  }
  if (trace.tokens() >= 8) {
    std::vector<double> fractions;
    for (int i = 1; i <= 20; ++i) fractions.push_back(i / 20.0);
    // Each quarter of the text replayed (its first quarter only warming the cache) with the hot
    // neurons ranked on the other three: a served model meets text its ranking did not see (an
    // in-sample curve was a third too optimistic at half the bundles), and a ranking on half
    // the text was pessimistic where the file's, on all of it, did better (bench/RESULTS.md).
    out.miss_curve = ReplayMissCurve(trace, record_bytes, fractions, trace.tokens() / 8,
                                     ReplayPolicy::kHotHalfAndLru, /*folds=*/2);
    out.optimum_curve = ReplayMissCurve(trace, record_bytes, fractions, trace.tokens() / 8,
                                        ReplayPolicy::kOptimum, /*folds=*/2);
  }
  return out;
}

}  // namespace sparrow::tools
