#include "engine/tools/expert_calibration.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/moe_ffn.h"
#include "engine/tools/calibration_run.h"

namespace sparrow::tools {
namespace {

// Counts each expert's choices and keeps every token's, in order, for the replay.
class RoutingRecorder : public ExpertObserver {
 public:
  RoutingRecorder(int64_t n_layer, int64_t n_expert, int64_t k)
      : n_expert_(n_expert), k_(k), counts_(n_layer * n_expert, 0), trace_(n_layer, n_expert) {}
  void OnRouted(int64_t il, const FfnInput& in, const int32_t* chosen) override {
    for (int64_t t = 0; t < in.n; ++t) {
      const int32_t* ids = chosen + t * k_;
      for (int64_t j = 0; j < k_; ++j) ++counts_[il * n_expert_ + ids[j]];
      sorted_.assign(ids, ids + k_);
      std::sort(sorted_.begin(), sorted_.end());
      trace_.Append(il, sorted_);
    }
  }
  const int64_t* layer(int64_t il) const { return &counts_[il * n_expert_]; }
  const NeuronTrace& trace() const { return trace_; }

 private:
  int64_t n_expert_, k_;
  std::vector<int64_t> counts_;
  std::vector<int32_t> sorted_;
  NeuronTrace trace_;
};

}  // namespace

double HottestExpertShare(const std::vector<std::vector<double>>& counts, double share) {
  double taken = 0;
  for (std::vector<double> c : counts) {
    std::sort(c.rbegin(), c.rend());
    const auto top = std::clamp<int64_t>(std::llround(share * static_cast<double>(c.size())), 1,
                                         static_cast<int64_t>(c.size()));
    const double all = std::accumulate(c.begin(), c.end(), 0.0);
    taken += all > 0 ? std::accumulate(c.begin(), c.begin() + top, 0.0) / all : 0;
  }
  return counts.empty() ? 0 : taken / static_cast<double>(counts.size());
}

Result<ExpertCalibration> CalibrateExperts(const std::string& model_path,
                                           const std::string& text_file, int64_t max_tokens,
                                           int threads, size_t record_bytes) {
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(model_path));
  const ModelConfig& c = model->config();
  if (c.n_expert == 0) return InvalidArgument(model_path + " has no experts to calibrate");
  SPARROW_ASSIGN_OR_RETURN(std::vector<int32_t> tokens,
                           CalibrationTokens(*model, text_file, max_tokens));

  kernels::ThreadPool pool(std::max(1, threads));
  auto ffn = std::make_unique<MoeFfn>(*model, &pool);
  RoutingRecorder recorder(c.n_layer, c.n_expert, c.n_expert_used);
  ffn->set_observer(&recorder);
  ForwardPass fp(*model, &pool, std::move(ffn));
  // Routing is per token: a prompt's tokens route as decoded ones would.
  SPARROW_RETURN_IF_ERROR(RunCalibrationWindows(*model, fp, tokens));
  ExpertCalibration out;
  const NeuronTrace& trace = recorder.trace();
  out.tokens = trace.tokens();
  out.orders.assign(c.n_layer, std::vector<int32_t>(c.n_expert));
  out.frequency.assign(c.n_layer, std::vector<double>(c.n_expert));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    std::vector<int32_t>& order = out.orders[il];
    std::iota(order.begin(), order.end(), 0);
    const int64_t* f = recorder.layer(il);
    std::stable_sort(order.begin(), order.end(), [f](int32_t a, int32_t b) { return f[a] > f[b]; });
    for (int64_t e = 0; e < c.n_expert; ++e) {
      out.frequency[il][e] =
          out.tokens > 0 ? static_cast<double>(f[e]) / static_cast<double>(out.tokens) : 0;
    }
  }
  if (out.tokens >= 8) {
    std::vector<double> fractions;
    for (int i = 1; i <= 20; ++i) fractions.push_back(i / 20.0);
    out.miss_curve = ReplayMissCurve(trace, record_bytes, fractions, out.tokens / 8,
                                     ReplayPolicy::kHotHalfAndLru, /*folds=*/2);
  }
  return out;
}

}  // namespace sparrow::tools
