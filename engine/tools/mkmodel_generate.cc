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
#include "engine/tools/mkmodel_random.h"

namespace sparrow::tools {
namespace {

// How a tensor's values are drawn: center + uniform(-half_width, half_width).
struct Fill {
  float center = 0.0f;
  float half_width = 0.0f;
};

// How rows are made: uniform draws, or one of a PWRI layer's coupled tensors (mkmodel_pwri.h).
enum class RowSource { kUniform, kPwriGate, kPwriFc1, kPwriFc2 };

struct PlannedTensor {
  std::string name;
  TensorType type;
  int64_t cols;
  int64_t rows;
  Fill fill;
  RowSource source = RowSource::kUniform;
  int64_t layer = -1;
};

int64_t PredictorRank(const SyntheticModelSpec& spec) {
  if (spec.predictor_rank > 0) return spec.predictor_rank;
  return std::max<int64_t>(128, spec.shape.n_embd / 8 / 32 * 32);
}

PwriLayout LayoutOf(const SyntheticModelSpec& spec) {
  return {spec.shape.n_embd, spec.shape.n_ff, PredictorRank(spec), spec.active, spec.hot};
}

uint64_t LayerSeed(const SyntheticModelSpec& spec, int64_t il) {
  uint64_t state = spec.seed * 0x2545f4914f6cdd1dull + static_cast<uint64_t>(il);
  return SplitMix(state);
}

// Uniform(-a, a) has variance a^2 / 3; a = sqrt(3 / fan_in) gives variance 1 / fan_in.
Fill MatrixFill(int64_t fan_in) {
  return {0.0f, std::sqrt(3.0f / static_cast<float>(fan_in))};
}

std::vector<PlannedTensor> PlanTensors(const SyntheticModelSpec& spec, int64_t n_vocab,
                                       int64_t n_layer) {
  const ModelShape& s = spec.shape;
  const int64_t head_dim = s.n_embd / s.n_head;
  const int64_t q_dim = s.n_head * head_dim;
  const int64_t kv_dim = s.n_head_kv * head_dim;
  const Fill norm{1.0f, 0.05f};
  const Fill bias{0.0f, 0.1f};
  auto type = [&](TensorRole role, int64_t layer, int64_t cols) {
    return PickTensorType(spec.ftype, role, layer, n_layer, cols, s.tied_output);
  };
  std::vector<PlannedTensor> out;
  out.push_back({"token_embd.weight", type(TensorRole::kTokenEmbd, 0, s.n_embd), s.n_embd, n_vocab,
                 MatrixFill(s.n_embd)});
  out.push_back({"output_norm.weight", TensorType::kF32, s.n_embd, 1, norm});
  if (!s.tied_output) {
    out.push_back({"output.weight", type(TensorRole::kOutput, 0, s.n_embd), s.n_embd, n_vocab,
                   MatrixFill(s.n_embd)});
  }
  for (int64_t il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    auto matrix = [&](const char* name, TensorRole role, int64_t cols, int64_t rows) {
      out.push_back({p + name, type(role, il, cols), cols, rows, MatrixFill(cols)});
    };
    out.push_back({p + "attn_norm.weight", TensorType::kF32, s.n_embd, 1, norm});
    matrix("attn_q.weight", TensorRole::kAttnQ, s.n_embd, q_dim);
    matrix("attn_k.weight", TensorRole::kAttnK, s.n_embd, kv_dim);
    matrix("attn_v.weight", TensorRole::kAttnV, s.n_embd, kv_dim);
    if (s.qkv_bias) {
      out.push_back({p + "attn_q.bias", TensorType::kF32, q_dim, 1, bias});
      out.push_back({p + "attn_k.bias", TensorType::kF32, kv_dim, 1, bias});
      out.push_back({p + "attn_v.bias", TensorType::kF32, kv_dim, 1, bias});
    }
    matrix("attn_output.weight", TensorRole::kAttnOut, q_dim, s.n_embd);
    out.push_back({p + "ffn_norm.weight", TensorType::kF32, s.n_embd, 1, norm});
    matrix("ffn_gate.weight", TensorRole::kFfnGate, s.n_embd, s.n_ff);
    matrix("ffn_up.weight", TensorRole::kFfnUp, s.n_embd, s.n_ff);
    if (!spec.pwri) {
      matrix("ffn_down.weight", TensorRole::kFfnDown, s.n_ff, s.n_embd);
      continue;
    }
    out[out.size() - 2].source = RowSource::kPwriGate;
    out[out.size() - 2].layer = il;
    // PowerInfer's layout: down stored one row per neuron, then the predictor.
    out.push_back({p + "ffn_down_t.weight", type(TensorRole::kFfnDown, il, s.n_embd), s.n_embd,
                   s.n_ff, MatrixFill(s.n_ff)});
    const int64_t r = PredictorRank(spec);
    out.push_back({p + "fc1.weight",
                   type(TensorRole::kFfnUp, il, s.n_embd),
                   s.n_embd,
                   r,
                   {},
                   RowSource::kPwriFc1,
                   il});
    out.push_back({p + "fc2.weight",
                   type(TensorRole::kFfnUp, il, r),
                   r,
                   s.n_ff,
                   {},
                   RowSource::kPwriFc2,
                   il});
  }
  return out;
}

void AddMetadata(GgufFileWriter& w, const SyntheticModelSpec& spec, int64_t n_layer) {
  const ModelShape& s = spec.shape;
  const std::string arch = spec.pwri && spec.drelu ? "bamboo" : std::string(s.arch);
  const std::string a = arch + ".";
  if (spec.pwri) w.header().set_magic("PWRI");
  w.header().AddString("general.architecture", arch);
  w.header().AddString("general.name", "sparrow synthetic " + std::string(s.name));
  w.header().AddU32("general.file_type", GgufFileTypeId(spec.ftype));
  w.header().AddU32("general.quantization_version", 2);
  w.header().AddU32(a + "context_length", static_cast<uint32_t>(s.n_ctx));
  w.header().AddU32(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
  w.header().AddU32(a + "block_count", static_cast<uint32_t>(n_layer));
  w.header().AddU32(a + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.header().AddU32(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
  w.header().AddU32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  w.header().AddU32(a + "rope.dimension_count", static_cast<uint32_t>(s.n_embd / s.n_head));
  w.header().AddF32(a + "rope.freq_base", s.rope_freq_base);
  w.header().AddF32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  if (spec.pwri) w.header().AddF32("powerinfer.sparse_threshold", 0.0f);
}

// Generates and converts rows [row0, row0 + n) of `t` into `dst`, spread over the pool.
void FillRows(const PlannedTensor& t, const PwriLayer* layer, uint64_t tensor_seed, int64_t row0,
              int64_t n, size_t row_bytes, uint8_t* dst, kernels::ThreadPool& pool,
              std::vector<std::vector<float>>& scratch) {
  pool.ParallelFor(n, [&](int64_t i, int thread) {
    std::vector<float>& row = scratch[thread];
    row.resize(t.cols);
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
    kernels::QuantizeRow(t.type, row.data(), dst + i * row_bytes, t.cols);
  });
}

}  // namespace

Result<SyntheticModelSummary> WriteSyntheticModel(const SyntheticModelSpec& spec) {
  const ModelShape& s = spec.shape;
  if (s.n_embd % s.n_head != 0 || s.n_head % s.n_head_kv != 0) {
    return InvalidArgument("shape " + std::string(s.name) + ": inconsistent head counts");
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
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* tokens, vocab->GetArray("tokenizer.ggml.tokens"));
  const int64_t n_vocab = static_cast<int64_t>(tokens->size);

  GgufFileWriter w;
  AddMetadata(w, spec, n_layer);
  for (const auto& [key, value] : vocab->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      SPARROW_RETURN_IF_ERROR(w.header().AddCopy(key, value).WithContext(spec.vocab_path));
    }
  }

  const std::vector<PlannedTensor> plan = PlanTensors(spec, n_vocab, n_layer);
  SyntheticModelSummary summary;
  summary.n_vocab = n_vocab;
  for (const PlannedTensor& t : plan) {
    const std::vector<uint64_t> dims =
        t.rows == 1
            ? std::vector<uint64_t>{static_cast<uint64_t>(t.cols)}
            : std::vector<uint64_t>{static_cast<uint64_t>(t.cols), static_cast<uint64_t>(t.rows)};
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
