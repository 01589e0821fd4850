#include "engine/tools/mkmodel_balance.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/moe_ffn.h"
#include "engine/tools/calibration_run.h"
#include "engine/tools/expert_calibration.h"

namespace sparrow::tools {
namespace {

// Sums each layer's router inputs and counts its choices.
class RouterInputs : public ExpertObserver {
 public:
  RouterInputs(const ModelConfig& c)
      : d_(c.n_embd),
        e_(c.n_expert),
        k_(c.n_expert_used),
        sum_(c.n_layer * c.n_embd, 0.0),
        tokens_(c.n_layer, 0),
        counts_(c.n_layer * c.n_expert, 0) {}
  void OnRouted(int64_t il, const FfnInput& in, const int32_t* chosen) override {
    const float* x = in.layer_input ? in.layer_input : in.normed;
    for (int64_t t = 0; t < in.n; ++t) {
      for (int64_t i = 0; i < d_; ++i) sum_[il * d_ + i] += x[t * d_ + i];
      for (int64_t j = 0; j < k_; ++j) ++counts_[il * e_ + chosen[t * k_ + j]];
    }
    tokens_[il] += in.n;
  }
  // Unit mean direction of layer il's router input.
  std::vector<float> Direction(int64_t il) const {
    std::vector<float> m(d_);
    double norm = 0;
    for (int64_t i = 0; i < d_; ++i) norm += sum_[il * d_ + i] * sum_[il * d_ + i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < d_; ++i)
      m[i] = norm > 0 ? static_cast<float>(sum_[il * d_ + i] / norm) : 0.0f;
    return m;
  }
  // Share of the routings the hottest 10% of experts took, mean over layers.
  double Hot10() const {
    std::vector<std::vector<double>> counts(tokens_.size());
    for (size_t il = 0; il < counts.size(); ++il) {
      counts[il].assign(counts_.begin() + static_cast<int64_t>(il) * e_,
                        counts_.begin() + static_cast<int64_t>(il + 1) * e_);
    }
    return HottestExpertShare(counts, 0.1);
  }

 private:
  int64_t d_, e_, k_;
  std::vector<double> sum_;
  std::vector<int64_t> tokens_, counts_;
};

// Runs the model at `path` over `tokens` and returns what its routers saw.
Result<std::unique_ptr<RouterInputs>> Observe(const std::string& path,
                                              const std::vector<int32_t>& tokens, int threads) {
  SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(path));
  kernels::ThreadPool pool(std::max(1, threads));
  auto inputs = std::make_unique<RouterInputs>(model->config());
  auto ffn = std::make_unique<MoeFfn>(*model, &pool);
  ffn->set_observer(inputs.get());
  ForwardPass fp(*model, &pool, std::move(ffn));
  SPARROW_RETURN_IF_ERROR(RunCalibrationWindows(*model, fp, tokens));
  return inputs;
}

}  // namespace

Result<RouterBalance> BalanceRouters(const std::string& path, const std::string& text_file,
                                     int64_t max_tokens, int threads) {
  std::vector<int32_t> tokens;
  int64_t n_layer = 0, n_expert = 0, d = 0;
  std::vector<uint64_t> offsets;  // each layer's router in the file
  {
    SPARROW_ASSIGN_OR_RETURN(auto model, Model::Load(path));
    const ModelConfig& c = model->config();
    if (c.n_expert == 0) return InvalidArgument(path + " has no experts whose routers to balance");
    if (model->weights().bundles) {
      return InvalidArgument(path + " is converted; balance the routers of the source file");
    }
    n_layer = c.n_layer;
    n_expert = c.n_expert;
    d = c.n_embd;
    for (const LayerWeights& l : model->weights().layers) {
      if (l.ffn_gate_inp.type != TensorType::kF32) {
        return Unsupported(path + ": routers of type " +
                           std::string(TensorTypeName(l.ffn_gate_inp.type)) +
                           " (balancing rewrites F32 routers)");
      }
      offsets.push_back(static_cast<uint64_t>(static_cast<const uint8_t*>(l.ffn_gate_inp.data) -
                                              model->file().base()));
    }
    SPARROW_ASSIGN_OR_RETURN(tokens, CalibrationTokens(*model, text_file, max_tokens));
  }
  RouterBalance out;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) return IoError(path + ": cannot open for writing");
  std::vector<float> rows(n_expert * d);
  for (int64_t il = 0; il < n_layer; ++il) {
    SPARROW_ASSIGN_OR_RETURN(auto seen, Observe(path, tokens, threads));
    if (il == 0) out.hot10_before = seen->Hot10();
    const std::vector<float> m = seen->Direction(il);
    f.seekg(static_cast<std::streamoff>(offsets[il]));
    f.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size() * 4));
    for (int64_t e = 0; e < n_expert; ++e) {
      float* w = &rows[e * d];
      double dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(w[i]) * m[i];
      for (int64_t i = 0; i < d; ++i) w[i] -= static_cast<float>(dot) * m[i];
    }
    f.seekp(static_cast<std::streamoff>(offsets[il]));
    f.write(reinterpret_cast<const char*>(rows.data()),
            static_cast<std::streamsize>(rows.size() * 4));
    f.flush();
    if (!f) return IoError(path + ": writing layer " + std::to_string(il) + "'s router failed");
  }
  f.close();
  SPARROW_ASSIGN_OR_RETURN(auto seen, Observe(path, tokens, threads));
  out.hot10_after = seen->Hot10();
  return out;
}

}  // namespace sparrow::tools
