#include "engine/shard/layer_profile.h"

#include <algorithm>
#include <chrono>

#include "engine/shard/layer_range_runner.h"

namespace sparrow {

std::vector<double> ProfileLayerDecodeMs(const Model& model, kernels::ThreadPool* pool) {
  using Clock = std::chrono::steady_clock;
  const ModelConfig& c = model.config();
  std::vector<double> ms(static_cast<size_t>(c.n_layer), 0.0);
  const std::vector<int32_t> token = {1};
  const std::vector<int32_t> table = {0};
  for (int64_t l = 0; l < c.n_layer; ++l) {
    auto runner = LayerRangeRunner::Create(model, pool, {l, l + 1, 16, 1});
    if (!runner.ok()) continue;
    std::vector<double> runs;
    for (int rep = 0; rep < 4; ++rep) {
      std::vector<float> hidden(static_cast<size_t>(c.n_embd), 0.01f);
      const StageSegment seg{token, rep, table};
      const auto t0 = Clock::now();
      if (!(*runner)->Run({&seg, 1}, hidden).ok()) break;
      const double t = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (rep > 0) runs.push_back(t);
    }
    if (runs.empty()) continue;
    std::sort(runs.begin(), runs.end());
    ms[static_cast<size_t>(l)] = runs[runs.size() / 2];
  }
  return ms;
}

}  // namespace sparrow
