#include "engine/tools/mkmodel_plan.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/tools/mkmodel_random.h"
#include "engine/tools/quantize_plan.h"

namespace sparrow::tools {
namespace {

const Fill kNorm{1.0f, 0.05f};
const Fill kBias{0.0f, 0.1f};

// Uniform(-a, a) has variance a^2 / 3; a = sqrt(3 / fan_in) gives variance 1 / fan_in.
Fill MatrixFill(int64_t fan_in) {
  return {0.0f, std::sqrt(3.0f / static_cast<float>(fan_in))};
}

int64_t HeadDim(const ModelShape& s) {
  return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
}

int64_t RopeDims(const ModelShape& s) {
  return s.n_rot > 0 ? s.n_rot : HeadDim(s);
}

// Llama 3.1's rope scaling (factor 32, low 1, high 4, original context 8192) as the converter
// stores it: one divisor per rotated pair, 1 for short wavelengths, 32 for long ones.
std::vector<float> Llama3RopeFreqs(int64_t n_rot, float base) {
  constexpr double kFactor = 32, kLow = 1, kHigh = 4, kOrig = 8192;
  std::vector<float> out;
  for (int64_t i = 0; i < n_rot; i += 2) {
    const double wavelen = 2 * std::numbers::pi * std::pow(base, static_cast<double>(i) / n_rot);
    double f = kFactor;
    if (wavelen < kOrig / kHigh) {
      f = 1;
    } else if (wavelen <= kOrig / kLow) {
      const double smooth = (kOrig / wavelen - kLow) / (kHigh - kLow);
      f = 1 / ((1 - smooth) / kFactor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// Collects tensors; quantizable ones get llama-quantize's type for their name.
class Planner {
 public:
  Planner(const SyntheticModelSpec& spec, int64_t n_layer)
      : ftype_(spec.ftype), facts_{n_layer, spec.shape.n_expert, spec.shape.tied_output} {}

  Status Matrix(std::string name, int64_t cols, int64_t rows, int64_t experts = 0) {
    const std::vector<uint64_t> dims = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)};
    TensorType t = TensorType::kF32;  // the router stays F32, as llama-quantize leaves it
    if (IsQuantizable(name, dims)) {
      SPARROW_ASSIGN_OR_RETURN(t, QuantizedType(ftype_, name, cols, facts_));
    }
    PlannedTensor& p = Add(std::move(name), t, cols, rows * std::max<int64_t>(experts, 1));
    p.fill = MatrixFill(cols);
    p.experts = experts;
    return Status::Ok();
  }
  void Vector(std::string name, int64_t n, Fill fill) {
    Add(std::move(name), TensorType::kF32, n, 1).fill = fill;
  }
  void Values(std::string name, std::vector<float> values) {
    Vector(std::move(name), static_cast<int64_t>(values.size()), {});
    out_.back().values = std::move(values);
  }
  std::vector<PlannedTensor>& tensors() { return out_; }

 private:
  PlannedTensor& Add(std::string name, TensorType type, int64_t cols, int64_t rows) {
    PlannedTensor& p = out_.emplace_back();
    p.name = std::move(name);
    p.type = type;
    p.cols = cols;
    p.rows = rows;
    return p;
  }

  ModelFileType ftype_;
  QuantizeModelFacts facts_;
  std::vector<PlannedTensor> out_;
};

Status PlanAttention(const ModelShape& s, const std::string& p, Planner& pl) {
  const int64_t q_dim = s.n_head * HeadDim(s), kv_dim = s.n_head_kv * HeadDim(s);
  pl.Vector(p + "attn_norm.weight", s.n_embd, kNorm);
  if (s.fused) {
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "attn_qkv.weight", s.n_embd, q_dim + 2 * kv_dim));
  } else {
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "attn_q.weight", s.n_embd, q_dim));
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "attn_k.weight", s.n_embd, kv_dim));
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "attn_v.weight", s.n_embd, kv_dim));
  }
  if (s.qkv_bias) {
    pl.Vector(p + "attn_q.bias", q_dim, kBias);
    pl.Vector(p + "attn_k.bias", kv_dim, kBias);
    pl.Vector(p + "attn_v.bias", kv_dim, kBias);
  }
  if (s.qk_norm || s.qk_norm_whole) {
    pl.Vector(p + "attn_q_norm.weight", s.qk_norm_whole ? q_dim : HeadDim(s), kNorm);
    pl.Vector(p + "attn_k_norm.weight", s.qk_norm_whole ? kv_dim : HeadDim(s), kNorm);
  }
  SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "attn_output.weight", q_dim, s.n_embd));
  if (s.post_norms) pl.Vector(p + "post_attention_norm.weight", s.n_embd, kNorm);
  return Status::Ok();
}

// PowerInfer's layout: down stored one row per neuron, then the predictor.
Status PlanPwriFfn(const SyntheticModelSpec& spec, int64_t il, const std::string& p, Planner& pl) {
  const ModelShape& s = spec.shape;
  const int64_t r = PredictorRank(spec);
  SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_down_t.weight", s.n_embd, s.n_ff));
  pl.tensors().back().fill = MatrixFill(s.n_ff);
  SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "fc1.weight", s.n_embd, r));
  SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "fc2.weight", r, s.n_ff));
  std::vector<PlannedTensor>& t = pl.tensors();
  const size_t n = t.size();
  t[n - 5].source = RowSource::kPwriGate;  // ffn_gate, before ffn_up
  t[n - 2].source = RowSource::kPwriFc1;
  t[n - 1].source = RowSource::kPwriFc2;
  for (size_t i : {n - 5, n - 2, n - 1}) t[i].layer = il;
  return Status::Ok();
}

Status PlanFfn(const SyntheticModelSpec& spec, int64_t il, const std::string& p, Planner& pl) {
  const ModelShape& s = spec.shape;
  pl.Vector(p + "ffn_norm.weight", s.n_embd, kNorm);
  if (s.n_expert > 0) {
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_gate_inp.weight", s.n_embd, s.n_expert));
    if (spec.expert_skew > 0) {
      // The normed hidden state x has about 0.8 of its length along the shared direction u
      // (the embedding's offset), so x . u ~ 0.8 n_embd: this offset gives expert e a logit
      // bias of -skew * ln(1 + rank) in units of the random logit's standard deviation (1).
      PlannedTensor& r = pl.tensors().back();
      r.popularity = static_cast<float>(spec.expert_skew / (0.8 * static_cast<double>(s.n_embd)));
      r.layer = il;
    }
    SPARROW_RETURN_IF_ERROR(
        pl.Matrix(p + "ffn_gate_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert));
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_up_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert));
    SPARROW_RETURN_IF_ERROR(
        pl.Matrix(p + "ffn_down_exps.weight", s.n_ff_exp, s.n_embd, s.n_expert));
  } else if (s.fused) {
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_up.weight", s.n_embd, 2 * s.n_ff));
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_down.weight", s.n_ff, s.n_embd));
  } else {
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff));
    SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_up.weight", s.n_embd, s.n_ff));
    if (spec.pwri) {
      SPARROW_RETURN_IF_ERROR(PlanPwriFfn(spec, il, p, pl));
    } else {
      SPARROW_RETURN_IF_ERROR(pl.Matrix(p + "ffn_down.weight", s.n_ff, s.n_embd));
    }
  }
  if (s.post_norms) pl.Vector(p + "post_ffw_norm.weight", s.n_embd, kNorm);
  return Status::Ok();
}

}  // namespace

float SharedSign(int64_t c) {
  uint64_t state = static_cast<uint64_t>(c) * 0xd1b54a32d192ed03ull;
  return (SplitMix(state) & 1) ? 1.0f : -1.0f;
}

int64_t PopularityRank(int64_t e, int64_t il, int64_t n) {
  // 37 is prime to every expert count a shape has (8 to 128): a permutation per layer.
  return (e * 37 + il * 11) % n;
}

int64_t PredictorRank(const SyntheticModelSpec& spec) {
  if (spec.predictor_rank > 0) return spec.predictor_rank;
  return std::max<int64_t>(128, spec.shape.n_embd / 8 / 32 * 32);
}

PwriLayout LayoutOf(const SyntheticModelSpec& spec) {
  return {spec.shape.n_embd, spec.shape.n_ff, PredictorRank(spec), spec.active, spec.hot};
}

Result<std::vector<PlannedTensor>> PlanTensors(const SyntheticModelSpec& spec, int64_t n_vocab,
                                               int64_t n_layer) {
  const ModelShape& s = spec.shape;
  Planner pl(spec, n_layer);
  SPARROW_RETURN_IF_ERROR(pl.Matrix("token_embd.weight", s.n_embd, n_vocab));
  if (spec.expert_skew > 0) {
    PlannedTensor& e = pl.tensors().back();
    e.shared_offset = e.fill.half_width;
  }
  pl.Vector("output_norm.weight", s.n_embd, kNorm);
  if (!s.tied_output) SPARROW_RETURN_IF_ERROR(pl.Matrix("output.weight", s.n_embd, n_vocab));
  if (s.rope_freqs) pl.Values("rope_freqs.weight", Llama3RopeFreqs(RopeDims(s), s.rope_freq_base));
  if (s.rope_n_ctx_orig > 0) {
    // LongRoPE's factors: the long ones as far from 1 as Phi's, the short ones near 1.
    pl.Vector("rope_factors_long.weight", RopeDims(s) / 2, {4.5f, 3.5f});
    pl.Vector("rope_factors_short.weight", RopeDims(s) / 2, {1.05f, 0.05f});
  }
  for (int64_t il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    SPARROW_RETURN_IF_ERROR(PlanAttention(s, p, pl));
    SPARROW_RETURN_IF_ERROR(PlanFfn(spec, il, p, pl));
  }
  return std::move(pl.tensors());
}

void AddModelMetadata(GgufHeader& h, const SyntheticModelSpec& spec, int64_t n_layer) {
  const ModelShape& s = spec.shape;
  const std::string arch = spec.pwri && spec.drelu ? "bamboo" : std::string(s.arch);
  const std::string a = arch + ".";
  auto u32 = [&](const char* key, int64_t v) { h.AddU32(a + key, static_cast<uint32_t>(v)); };
  if (spec.pwri) h.set_magic("PWRI");
  h.AddString("general.architecture", arch);
  h.AddString("general.name", "sparrow synthetic " + std::string(s.name));
  h.AddU32("general.file_type", GgufFileTypeId(spec.ftype));
  h.AddU32("general.quantization_version", 2);
  u32("context_length", s.n_ctx);
  u32("embedding_length", s.n_embd);
  u32("block_count", n_layer);
  u32("feed_forward_length", s.n_ff);
  u32("attention.head_count", s.n_head);
  u32("attention.head_count_kv", s.n_head_kv);
  if (s.head_dim > 0) {
    u32("attention.key_length", s.head_dim);
    u32("attention.value_length", s.head_dim);
  }
  u32("rope.dimension_count", RopeDims(s));
  h.AddF32(a + "rope.freq_base", s.rope_freq_base);
  h.AddF32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  if (s.rope_scale_linear > 0) {
    h.AddString(a + "rope.scaling.type", "linear");
    h.AddF32(a + "rope.scaling.factor", s.rope_scale_linear);
  }
  if (s.rope_n_ctx_orig > 0) {
    // The attention factor Phi's converter derives from the context extension.
    const double ratio = static_cast<double>(s.n_ctx) / static_cast<double>(s.rope_n_ctx_orig);
    u32("rope.scaling.original_context_length", s.rope_n_ctx_orig);
    h.AddF32(a + "rope.scaling.attn_factor",
             static_cast<float>(std::sqrt(1 + std::log(ratio) / std::log(s.rope_n_ctx_orig))));
  }
  if (s.n_swa > 0) u32("attention.sliding_window", s.n_swa);
  if (s.swa_pattern > 0) u32("attention.sliding_window_pattern", s.swa_pattern);
  if (s.n_expert > 0) {
    u32("expert_count", s.n_expert);
    u32("expert_used_count", s.n_expert_used);
    u32("expert_feed_forward_length", s.n_ff_exp);
  }
  if (s.expert_gating > 0) u32("expert_gating_func", s.expert_gating);
  if (spec.pwri) h.AddF32("powerinfer.sparse_threshold", 0.0f);
}

}  // namespace sparrow::tools
