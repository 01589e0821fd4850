#include "engine/tools/mkmodel_generate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "engine/common/result.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_file_writer.h"
#include "engine/tools/mkmodel_plan.h"
#include "engine/tools/mkmodel_random.h"
#include "engine/tools/mkmodel_vocab.h"

namespace sparrow::tools {
namespace {

uint64_t LayerSeed(const SyntheticModelSpec& spec, int64_t il) {
  uint64_t state = spec.seed * 0x2545f4914f6cdd1dull + static_cast<uint64_t>(il);
  return SplitMix(state);
}

// Generates and converts rows [row0, row0 + n) of `t` into `dst`, spread over the pool.
void FillRows(const PlannedTensor& t, const PwriLayer* layer, uint64_t tensor_seed, int64_t row0,
              int64_t n, size_t row_bytes, uint8_t* dst, kernels::ThreadPool& pool,
              std::vector<std::vector<float>>& scratch) {
  pool.ParallelFor(n, [&](int64_t i, int thread) {
    std::vector<float>& row = scratch[thread];
    row.resize(t.cols);
    if (!t.values.empty()) {
      std::copy(t.values.begin(), t.values.end(), row.begin());
      kernels::QuantizeRow(t.type, row.data(), dst + i * row_bytes, t.cols);
      return;
    }
    if (t.source != RowSource::kUniform) {
      if (t.source == RowSource::kPwriGate) layer->GateRow(row0 + i, row.data());
      if (t.source == RowSource::kPwriFc1) layer->Fc1Row(row0 + i, row.data());
      if (t.source == RowSource::kPwriFc2) layer->Fc2Row(row0 + i, row.data());
      kernels::QuantizeRow(t.type, row.data(), dst + i * row_bytes, t.cols);
      return;
    }
    // Each row has its own stream, so the file does not depend on the thread count.
    uint64_t state = RowStream(tensor_seed, row0 + i);
    for (int64_t c = 0; c < t.cols; ++c)
      row[c] = UniformFloat(state, t.fill.center, t.fill.half_width);
    float offset = t.shared_offset;
    if (t.popularity != 0.0f) {
      const int64_t experts = t.rows;
      offset -=
          t.popularity * std::log1p(static_cast<float>(PopularityRank(row0 + i, t.layer, experts)));
    }
    if (offset != 0.0f) {
      for (int64_t c = 0; c < t.cols; ++c) row[c] += offset * SharedSign(c);
    }
    kernels::QuantizeRow(t.type, row.data(), dst + i * row_bytes, t.cols);
  });
}

}  // namespace

Result<SyntheticModelSummary> WriteSyntheticModel(const SyntheticModelSpec& spec) {
  const ModelShape& s = spec.shape;
  if ((s.head_dim == 0 && s.n_embd % s.n_head != 0) || s.n_head % s.n_head_kv != 0 ||
      (s.n_expert > 0) != (s.n_ff_exp > 0) || s.n_expert_used > s.n_expert) {
    return InvalidArgument("shape " + std::string(s.name) + ": inconsistent head or expert counts");
  }
  const int64_t n_layer = spec.n_layer > 0 ? std::min(spec.n_layer, s.n_layer) : s.n_layer;
  if (spec.pwri) {
    if (s.arch != "llama") {
      return InvalidArgument("shape " + std::string(s.name) + " is " + std::string(s.arch) +
                             ": PowerInfer's format holds llama-architecture models only");
    }
    SPARROW_RETURN_IF_ERROR(CheckPwriLayout(LayoutOf(spec)));
  }

  SPARROW_ASSIGN_OR_RETURN(auto vocab, GgufFile::Open(spec.vocab_path));
  GgufFileWriter w;
  AddModelMetadata(w.header(), spec, n_layer);
  SPARROW_ASSIGN_OR_RETURN(const int64_t n_vocab,
                           CopyVocabulary(*vocab, spec.vocab_path, s.n_vocab, w.header()));

  SPARROW_ASSIGN_OR_RETURN(const std::vector<PlannedTensor> plan,
                           PlanTensors(spec, n_vocab, n_layer));
  SyntheticModelSummary summary;
  summary.n_vocab = n_vocab;
  for (const PlannedTensor& t : plan) {
    std::vector<uint64_t> dims = {static_cast<uint64_t>(t.cols)};
    if (t.experts > 0) {
      dims.push_back(static_cast<uint64_t>(t.rows / t.experts));
      dims.push_back(static_cast<uint64_t>(t.experts));
    } else if (t.rows > 1) {
      dims.push_back(static_cast<uint64_t>(t.rows));
    }
    if (w.DeclareTensor(t.name, t.type, dims) == 0) {
      return InvalidArgument(t.name + ": row length " + std::to_string(t.cols) + " does not fit " +
                             std::string(TensorTypeName(t.type)) + " blocks");
    }
    summary.n_params += static_cast<uint64_t>(t.cols) * t.rows;
  }
  summary.data_bytes = w.data_bytes();
  SPARROW_RETURN_IF_ERROR(w.Begin(spec.out_path));

  kernels::ThreadPool pool(std::max(1, spec.threads));
  std::vector<std::vector<float>> scratch(pool.size());
  std::vector<uint8_t> chunk;
  std::unique_ptr<PwriLayer> layer;  // the coupled tensors' layer being written
  int64_t layer_index = -1;
  std::vector<float> frequencies;
  constexpr int64_t kChunkElems = int64_t{1} << 23;  // ~8M values per write
  for (size_t ti = 0; ti < plan.size(); ++ti) {
    const PlannedTensor& t = plan[ti];
    const auto traits = GetTensorTypeTraits(t.type);
    const size_t row_bytes = t.cols / traits->block_elems * traits->block_bytes;
    uint64_t seed_state = spec.seed * 0x9e3779b97f4a7c15ull + ti;
    const uint64_t tensor_seed = SplitMix(seed_state);
    if (t.source != RowSource::kUniform && (!layer || layer_index != t.layer)) {
      layer = std::make_unique<PwriLayer>(LayoutOf(spec), LayerSeed(spec, t.layer));
      layer_index = t.layer;
      frequencies.insert(frequencies.end(), layer->frequencies().begin(),
                         layer->frequencies().end());
    }
    const int64_t rows_per_chunk = std::max<int64_t>(1, kChunkElems / t.cols);
    for (int64_t r = 0; r < t.rows; r += rows_per_chunk) {
      const int64_t n = std::min(rows_per_chunk, t.rows - r);
      chunk.resize(n * row_bytes);
      FillRows(t, layer.get(), tensor_seed, r, n, row_bytes, chunk.data(), pool, scratch);
      SPARROW_RETURN_IF_ERROR(w.Append(chunk.data(), chunk.size()));
    }
    if (spec.verbose) {
      std::fprintf(stderr, "\r[%zu/%zu] %-28s %-6s", ti + 1, plan.size(), t.name.c_str(),
                   std::string(TensorTypeName(t.type)).c_str());
    }
  }
  if (spec.verbose) std::fprintf(stderr, "\n");
  SPARROW_RETURN_IF_ERROR(w.Finish());
  if (!frequencies.empty()) {
    double sum = 0.0;
    for (float f : frequencies) sum += f;
    summary.active = sum / static_cast<double>(frequencies.size());
    summary.hot_set_80 = HotSetShare(frequencies, 0.8);
  }
  return summary;
}

}  // namespace sparrow::tools
