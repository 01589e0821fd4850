#include "engine/shard/layer_profile.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "engine/shard/layer_range_runner.h"

namespace sparrow {

namespace {

// N of a tensor named blk.N.*; -1 for the others (embedding, output).
int64_t LayerOfTensor(std::string_view name) {
  int64_t layer = -1;
  if (name.starts_with("blk.")) std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return layer;
}

// What decides a layer's time: its tensors' bytes and whether its attention has a window. Layers
// alike are timed once (a dense model's all are), so a device reads one layer, not the model.
std::vector<std::pair<int64_t, bool>> LayerKinds(const Model& model) {
  const ModelConfig& c = model.config();
  std::vector<std::pair<int64_t, bool>> kinds(static_cast<size_t>(c.n_layer));
  for (int64_t l = 0; l < c.n_layer; ++l) kinds[static_cast<size_t>(l)].second = c.is_swa(l);
  for (const auto& t : model.file().tensors()) {
    const int64_t layer = LayerOfTensor(t.name);
    if (layer >= 0 && layer < c.n_layer) {
      kinds[static_cast<size_t>(layer)].first += static_cast<int64_t>(t.n_bytes);
    }
  }
  return kinds;
}

// Per token, `n` tokens of one sequence at a time (1: a decoded token; more: a prompt chunk).
double TimeLayer(const Model& model, kernels::ThreadPool* pool, int64_t layer, int64_t n) {
  using Clock = std::chrono::steady_clock;
  constexpr int kReps = 4;
  const int64_t blocks = (kReps * n + 15) / 16;
  auto runner =
      LayerRangeRunner::Create(model, pool, {layer, layer + 1, 16, blocks, std::nullopt, kF16Kv});
  if (!runner.ok()) return 0;
  const std::vector<int32_t> tokens(static_cast<size_t>(n), 1);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  std::vector<double> runs;
  for (int rep = 0; rep < kReps; ++rep) {
    std::vector<float> hidden(static_cast<size_t>(n * model.config().n_embd), 0.01f);
    const StageSegment seg{tokens, rep * n, table};
    const auto t0 = Clock::now();
    if (!(*runner)->Run({&seg, 1}, hidden).ok()) return 0;
    // The first run reads the layer's weights in; the rest are the steady state.
    if (rep > 0) {
      runs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2] / static_cast<double>(n);
}

std::vector<double> ProfileLayerMs(const Model& model, kernels::ThreadPool* pool, int64_t n) {
  const auto kinds = LayerKinds(model);
  std::map<std::pair<int64_t, bool>, double> timed;
  std::vector<double> ms(kinds.size(), 0.0);
  for (size_t l = 0; l < kinds.size(); ++l) {
    auto it = timed.find(kinds[l]);
    if (it == timed.end()) {
      it = timed.emplace(kinds[l], TimeLayer(model, pool, static_cast<int64_t>(l), n)).first;
    }
    ms[l] = it->second;
  }
  return ms;
}

}  // namespace

std::vector<double> ProfileLayerDecodeMs(const Model& model, kernels::ThreadPool* pool) {
  return ProfileLayerMs(model, pool, 1);
}

std::vector<double> ProfileLayerPrefillMs(const Model& model, kernels::ThreadPool* pool) {
  return ProfileLayerMs(model, pool, kPrefillProfileTokens);
}

ShardModelCost ModelShardCost(const Model& model, int64_t n_ctx, double value_bytes,
                              const KvTypes& kv_types) {
  const ModelConfig& c = model.config();
  ShardModelCost cost;
  cost.layer_bytes.assign(static_cast<size_t>(c.n_layer),
                          n_ctx * KvBytesPerLayerPosition(kv_types, c.kv_dim()));
  for (const auto& t : model.file().tensors()) {
    const int64_t layer = LayerOfTensor(t.name);
    if (layer >= 0 && layer < c.n_layer) {
      cost.layer_bytes[static_cast<size_t>(layer)] += static_cast<int64_t>(t.n_bytes);
    } else {
      cost.coordinator_fixed_bytes += static_cast<int64_t>(t.n_bytes);
    }
  }
  cost.activation_bytes = static_cast<int64_t>(static_cast<double>(c.n_embd) * value_bytes);
  return cost;
}

}  // namespace sparrow
