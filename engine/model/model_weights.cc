#include "engine/model/model_weights.h"

#include <set>
#include <string>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/vec_dot.h"
#include "engine/model/expert_bundles.h"
#include "engine/model/gguf_file.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {
namespace {

std::string Shape(const std::vector<uint64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

class Binder {
 public:
  explicit Binder(const GgufFile& f) : f_(f) {}

  bool Has(const std::string& name) const { return f_.FindTensor(name) != nullptr; }

  Result<const GgufTensorInfo*> Find(const std::string& name, bool required) {
    const GgufTensorInfo* t = f_.FindTensor(name);
    if (!t && required) return NotFound("tensor '" + name + "' is missing");
    if (t) {
      used_.insert(t);
      auto traits = GetTensorTypeTraits(t->type);
      if (!traits || !traits->weight_supported) {
        return Unsupported(
            "tensor '" + name + "' has type " + std::string(TensorTypeName(t->type)) +
            ", which Sparrow cannot compute with (supported: f32, f16, bf16, q4_0, q4_1, "
            "q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K)");
      }
    }
    return t;
  }

  // A matrix of `rows` rows of length `cols` (ggml dims {cols, rows}).
  Result<kernels::WeightMatrix> Matrix(const std::string& name, int64_t cols, int64_t rows,
                                       const char* what) {
    SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, true));
    return MatrixFrom(*t, cols, rows, what);
  }

  static Result<kernels::WeightMatrix> MatrixFrom(const GgufTensorInfo& t, int64_t cols,
                                                  int64_t rows, const char* what) {
    if (t.dims.size() != 2 || t.dims[0] != static_cast<uint64_t>(cols) ||
        t.dims[1] != static_cast<uint64_t>(rows)) {
      return Corrupt("tensor '" + t.name + "' has shape " + Shape(t.dims) + ", expected " +
                     std::to_string(cols) + " x " + std::to_string(rows) + " (" + what + ")");
    }
    kernels::WeightMatrix m;
    m.type = t.type;
    m.data = t.data;
    m.cols = cols;
    m.rows = rows;
    m.row_stride_bytes = t.row_bytes();
    return m;
  }

  // `n_expert` matrices of `rows` rows of `cols` (ggml dims {cols, rows, n_expert}) as one
  // matrix of n_expert * rows rows.
  Result<kernels::WeightMatrix> Experts(const std::string& name, int64_t cols, int64_t rows,
                                        int64_t n_expert, const char* what) {
    SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, true));
    if (t->dims.size() != 3 || t->dims[0] != static_cast<uint64_t>(cols) ||
        t->dims[1] != static_cast<uint64_t>(rows) ||
        t->dims[2] != static_cast<uint64_t>(n_expert)) {
      return Corrupt("tensor '" + name + "' has shape " + Shape(t->dims) + ", expected " +
                     std::to_string(cols) + " x " + std::to_string(rows) + " x " +
                     std::to_string(n_expert) + " (" + what + ")");
    }
    return kernels::WeightMatrix{t->type, t->data, cols, rows * n_expert, t->row_bytes()};
  }

  // Marks a tensor read elsewhere (the neuron-bundle layout) as used.
  void MarkUsed(const std::string& name) {
    if (const GgufTensorInfo* t = f_.FindTensor(name)) used_.insert(t);
  }

  // The first tensor of the file nothing bound: computing without it would be wrong silently.
  Status CheckAllUsed(const ModelConfig& c) const {
    for (const GgufTensorInfo& t : f_.tensors()) {
      if (used_.count(&t) == 0) {
        return Unsupported("tensor '" + t.name + "' is not used by Sparrow's '" +
                           std::string(c.arch->name) +
                           "' architecture; computing without it would give wrong outputs");
      }
    }
    return Status::Ok();
  }

  // A vector of `n` values, converted to f32.
  Result<std::vector<float>> Vector(const std::string& name, int64_t n, bool required) {
    SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, required));
    if (!t) return std::vector<float>();
    if (t->n_elements != static_cast<uint64_t>(n) || t->dims[0] != static_cast<uint64_t>(n)) {
      return Corrupt("tensor '" + name + "' has shape " + Shape(t->dims) + ", expected " +
                     std::to_string(n));
    }
    std::vector<float> out(n);
    kernels::DequantizeRow(t->type, t->data, out.data(), n);
    return out;
  }

 private:
  const GgufFile& f_;
  std::set<const GgufTensorInfo*> used_;
};

// A PowerInfer predictor: fc1 (rank rows of n_embd) and fc2 (n_ff rows of rank), of a rank
// that may differ per layer.
Status BindPredictor(Binder& b, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* fc1, b.Find(p + "fc1.weight", true));
  if (fc1->dims.size() != 2 || fc1->dims[1] == 0 || fc1->dims[1] > static_cast<uint64_t>(c.n_ff)) {
    return Corrupt("tensor '" + fc1->name + "' has shape " + Shape(fc1->dims) + ", expected " +
                   std::to_string(c.n_embd) + " x rank, rank 1.." + std::to_string(c.n_ff) +
                   " (the activation predictor's first layer)");
  }
  const auto rank = static_cast<int64_t>(fc1->dims[1]);
  SPARROW_ASSIGN_OR_RETURN(l.pred_fc1,
                           Binder::MatrixFrom(*fc1, c.n_embd, rank, "n_embd x predictor rank"));
  SPARROW_ASSIGN_OR_RETURN(l.pred_fc2,
                           b.Matrix(p + "fc2.weight", rank, c.n_ff, "predictor rank x n_ff"));
  // fc2 reads relu(fc1 . x) in fc2's vec-dot type, whose blocks must tile the rank.
  const auto act = GetTensorTypeTraits(kernels::VecDotType(l.pred_fc2.type));
  if (rank % act->block_elems != 0) {
    return Unsupported("tensor '" + p + "fc2.weight': predictor rank " + std::to_string(rank) +
                       " is not a multiple of " + std::to_string(act->block_elems) +
                       ", the block size its type computes with");
  }
  return Status::Ok();
}

// PowerInfer's per-layer tensors: ffn_down_t replaces ffn_down, and the predictor.
Status BindPowerInferFfn(Binder& b, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  if (b.Has(p + "ffn_down.weight")) {
    return Unsupported("tensor '" + p +
                       "ffn_down.weight' in a PowerInfer file: its FFN down projection is "
                       "expected transposed, as '" +
                       p + "ffn_down_t.weight'");
  }
  SPARROW_ASSIGN_OR_RETURN(l.ffn_down_t,
                           b.Matrix(p + "ffn_down_t.weight", c.n_embd, c.n_ff, "n_embd x n_ff"));
  return BindPredictor(b, p, c, l);
}

// One row matrix per row kind over a layer's records (n_ff rows, one record apart).
kernels::WeightMatrix RecordRows(const LayerBundles& lb, TensorType type, uint64_t offset,
                                 int64_t cols, int64_t rows) {
  return {type, lb.records + offset, cols, rows, static_cast<size_t>(lb.record_bytes)};
}

// A converted file's FFN (neuron_bundles.h): gate, up and down rows inside the records (the gate
// may be resident instead), a predictor where the model has PowerInfer's semantics.
Status BindBundledFfn(Binder& b, const std::string& p, const ModelConfig& c,
                      const NeuronBundleLayout& layout, const LayerBundles& lb, LayerWeights& l) {
  for (const char* name : {"ffn_up.weight", "ffn_down.weight", "ffn_down_t.weight"}) {
    if (b.Has(p + name)) {
      return Corrupt("tensor '" + p + name +
                     "' in a file of neuron bundles, whose FFN rows are in '" + p + "ffn_bundles'");
    }
  }
  if (layout.gate_in_bundle) {
    if (b.Has(p + "ffn_gate.weight")) {
      return Corrupt("tensor '" + p + "ffn_gate.weight' in a file whose gate rows are bundled");
    }
    l.ffn_gate = RecordRows(lb, lb.gate_type, lb.gate_offset, c.n_embd, c.n_ff);
  } else {
    SPARROW_ASSIGN_OR_RETURN(l.ffn_gate,
                             b.Matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff, "n_embd x n_ff"));
  }
  l.ffn_up = RecordRows(lb, lb.up_type, lb.up_offset, c.n_embd, c.n_ff);
  l.ffn_down_t = RecordRows(lb, lb.down_type, lb.down_offset, c.n_embd, c.n_ff);
  if (c.powerinfer) return BindPredictor(b, p, c, l);
  return Status::Ok();
}

// q, k and v: three matrices, or one fused attn_qkv whose rows are q's, then k's, then v's (each
// bound as a view of its rows), its bias split the same way; their biases where the file has
// them (required: the separate ones must be there).
Status BindQkv(Binder& b, const std::string& p, const ModelConfig& c, bool bias_required,
               LayerWeights& l) {
  if (b.Has(p + "attn_qkv.weight")) {
    const int64_t q = c.q_dim(), kv = c.kv_dim();
    SPARROW_ASSIGN_OR_RETURN(kernels::WeightMatrix qkv,
                             b.Matrix(p + "attn_qkv.weight", c.n_embd, q + 2 * kv,
                                      "n_embd x (n_head + 2*n_head_kv)*head_dim"));
    l.wq = RowRange(qkv, 0, q);
    l.wk = RowRange(qkv, q, kv);
    l.wv = RowRange(qkv, q + kv, kv);
    SPARROW_ASSIGN_OR_RETURN(std::vector<float> bias,
                             b.Vector(p + "attn_qkv.bias", q + 2 * kv, false));
    if (!bias.empty()) {
      l.bq.assign(bias.begin(), bias.begin() + q);
      l.bk.assign(bias.begin() + q, bias.begin() + q + kv);
      l.bv.assign(bias.begin() + q + kv, bias.end());
    }
    return Status::Ok();
  }
  SPARROW_ASSIGN_OR_RETURN(
      l.wq, b.Matrix(p + "attn_q.weight", c.n_embd, c.q_dim(), "n_embd x n_head*head_dim"));
  SPARROW_ASSIGN_OR_RETURN(
      l.wk, b.Matrix(p + "attn_k.weight", c.n_embd, c.kv_dim(), "n_embd x n_head_kv*head_dim"));
  SPARROW_ASSIGN_OR_RETURN(
      l.wv, b.Matrix(p + "attn_v.weight", c.n_embd, c.kv_dim(), "n_embd x n_head_kv*head_dim"));
  SPARROW_ASSIGN_OR_RETURN(l.bq, b.Vector(p + "attn_q.bias", c.q_dim(), bias_required));
  SPARROW_ASSIGN_OR_RETURN(l.bk, b.Vector(p + "attn_k.bias", c.kv_dim(), bias_required));
  SPARROW_ASSIGN_OR_RETURN(l.bv, b.Vector(p + "attn_v.bias", c.kv_dim(), bias_required));
  return Status::Ok();
}

// A mixture-of-experts FFN: the router and the stacked experts.
Status BindExperts(Binder& b, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  SPARROW_ASSIGN_OR_RETURN(l.ffn_gate_inp, b.Matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert,
                                                    "n_embd x n_expert"));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_gate_exps,
                           b.Experts(p + "ffn_gate_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert,
                                     "n_embd x n_ff_exp x n_expert"));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_up_exps, b.Experts(p + "ffn_up_exps.weight", c.n_embd, c.n_ff_exp,
                                                    c.n_expert, "n_embd x n_ff_exp x n_expert"));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_down_exps,
                           b.Experts(p + "ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert,
                                     "n_ff_exp x n_embd x n_expert"));
  return Status::Ok();
}

// A converted mixture-of-experts file (expert_bundles.h): the router stays, the experts are in
// the records.
Status BindBundledExperts(Binder& b, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  for (const char* name : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
    if (b.Has(p + name)) {
      return Corrupt("tensor '" + p + name +
                     "' in a file of expert bundles, whose experts are in '" + p +
                     "ffn_expert_bundles'");
    }
  }
  SPARROW_ASSIGN_OR_RETURN(l.ffn_gate_inp, b.Matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert,
                                                    "n_embd x n_expert"));
  return Status::Ok();
}

// A reranker's classification head (classifier_head.h), in any family: the tensors it has.
Status BindClassifierHead(Binder& b, const GgufFile& f, const ModelConfig& c, ClassifierHead* h) {
  const std::string labels_key = std::string(c.arch->name) + ".classifier.output_labels";
  int64_t n_labels = 1;
  if (f.Find(labels_key) != nullptr) {
    SPARROW_ASSIGN_OR_RETURN(const GgufArray* a, f.GetArray(labels_key));
    if (a->elem_type != GgufValueType::kString || a->size == 0) {
      return Corrupt(labels_key + " must be a non-empty array of strings");
    }
    h->labels.assign(a->strings.begin(), a->strings.end());
    n_labels = static_cast<int64_t>(a->size);
  }
  if (b.Has("cls.weight")) {
    SPARROW_ASSIGN_OR_RETURN(h->dense,
                             b.Matrix("cls.weight", c.n_embd, c.n_embd, "n_embd x n_embd"));
    SPARROW_ASSIGN_OR_RETURN(h->dense_bias, b.Vector("cls.bias", c.n_embd, false));
  }
  if (b.Has("cls.output.weight")) {
    SPARROW_ASSIGN_OR_RETURN(h->out, b.Matrix("cls.output.weight", c.n_embd, n_labels,
                                              "n_embd x one row per classifier label"));
    SPARROW_ASSIGN_OR_RETURN(h->out_bias, b.Vector("cls.output.bias", n_labels, false));
  }
  h->row = c.arch->rank_last_softmax ? PoolingType::kLast : PoolingType::kCls;
  h->softmax = c.arch->rank_last_softmax;
  return Status::Ok();
}

// An encoder's input rows: token type 0's row, the position rows, the input LayerNorm.
Status BindEncoderInputs(Binder& b, const ModelConfig& c, ModelWeights& w) {
  SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* types, b.Find("token_types.weight", false));
  if (types) {
    if (types->dims.size() != 2 || types->dims[0] != static_cast<uint64_t>(c.n_embd) ||
        types->dims[1] == 0) {
      return Corrupt("tensor 'token_types.weight' has shape " + Shape(types->dims) + ", expected " +
                     std::to_string(c.n_embd) + " x n_token_types");
    }
    w.token_type0.resize(static_cast<size_t>(c.n_embd));
    kernels::DequantizeRow(types->type, types->data, w.token_type0.data(), c.n_embd);
  }
  if (c.arch->abs_positions) {
    SPARROW_ASSIGN_OR_RETURN(w.position_embd, b.Matrix("position_embd.weight", c.n_embd,
                                                       c.n_ctx_train, "n_embd x context_length"));
  }
  SPARROW_ASSIGN_OR_RETURN(w.token_embd_norm, b.Vector("token_embd_norm.weight", c.n_embd, true));
  SPARROW_ASSIGN_OR_RETURN(w.token_embd_norm_b, b.Vector("token_embd_norm.bias", c.n_embd, true));
  return Status::Ok();
}

// An encoder layer's tensors (BindQkv's aside): attn_output and the two LayerNorms after the
// residual sums, with biases; the FFN ungated (up, down) or SwiGLU, its biases where present.
Status BindEncoderLayer(Binder& b, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  const int64_t d = c.n_embd;
  SPARROW_ASSIGN_OR_RETURN(l.bo, b.Vector(p + "attn_output.bias", d, false));
  SPARROW_ASSIGN_OR_RETURN(l.attn_out_norm, b.Vector(p + "attn_output_norm.weight", d, true));
  SPARROW_ASSIGN_OR_RETURN(l.attn_out_norm_b, b.Vector(p + "attn_output_norm.bias", d, true));
  if (c.ffn_kind != FfnKind::kGelu) {
    SPARROW_ASSIGN_OR_RETURN(l.ffn_gate,
                             b.Matrix(p + "ffn_gate.weight", d, c.n_ff, "n_embd x n_ff"));
  }
  SPARROW_ASSIGN_OR_RETURN(l.ffn_up, b.Matrix(p + "ffn_up.weight", d, c.n_ff, "n_embd x n_ff"));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_up_b, b.Vector(p + "ffn_up.bias", c.n_ff, false));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_down, b.Matrix(p + "ffn_down.weight", c.n_ff, d, "n_ff x n_embd"));
  SPARROW_ASSIGN_OR_RETURN(l.ffn_down_b, b.Vector(p + "ffn_down.bias", d, false));
  SPARROW_ASSIGN_OR_RETURN(l.layer_out_norm, b.Vector(p + "layer_output_norm.weight", d, true));
  SPARROW_ASSIGN_OR_RETURN(l.layer_out_norm_b, b.Vector(p + "layer_output_norm.bias", d, true));
  return Status::Ok();
}

// An encoder (ArchSpec::encoder): no output head, no neuron or expert bundles.
Result<ModelWeights> BindEncoderWeights(Binder& b, const GgufFile& file, const ModelConfig& c) {
  if (HasNeuronBundles(file) || HasExpertBundles(file) || c.powerinfer) {
    return Unsupported("a converted or PowerInfer file of the encoder architecture '" +
                       std::string(c.arch->name) + "'");
  }
  ModelWeights w;
  SPARROW_ASSIGN_OR_RETURN(w.token_embd,
                           b.Matrix("token_embd.weight", c.n_embd, c.n_vocab, "n_embd x n_vocab"));
  SPARROW_RETURN_IF_ERROR(BindEncoderInputs(b, c, w));
  w.layers.resize(c.n_layer);
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    SPARROW_RETURN_IF_ERROR(BindQkv(b, p, c, /*bias_required=*/false, l));  // as llama.cpp
    SPARROW_ASSIGN_OR_RETURN(
        l.wo, b.Matrix(p + "attn_output.weight", c.q_dim(), c.n_embd, "n_head*head_dim x n_embd"));
    SPARROW_RETURN_IF_ERROR(BindEncoderLayer(b, p, c, l));
  }
  SPARROW_RETURN_IF_ERROR(BindClassifierHead(b, file, c, &w.classifier));  // bge-reranker
  SPARROW_RETURN_IF_ERROR(b.CheckAllUsed(c));
  return w;
}

}  // namespace

Result<ModelWeights> BindModelWeights(const GgufFile& file, const ModelConfig& c) {
  Binder b(file);
  if (c.arch->encoder) return BindEncoderWeights(b, file, c);
  ModelWeights w;
  SPARROW_ASSIGN_OR_RETURN(w.token_embd,
                           b.Matrix("token_embd.weight", c.n_embd, c.n_vocab, "n_embd x n_vocab"));
  SPARROW_ASSIGN_OR_RETURN(w.output_norm, b.Vector("output_norm.weight", c.n_embd, true));
  SPARROW_ASSIGN_OR_RETURN(const GgufTensorInfo* out, b.Find("output.weight", false));
  if (out) {
    SPARROW_ASSIGN_OR_RETURN(w.output,
                             Binder::MatrixFrom(*out, c.n_embd, c.n_vocab, "n_embd x n_vocab"));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }

  if (c.arch->rope_freqs) {
    SPARROW_ASSIGN_OR_RETURN(w.rope_freqs, b.Vector("rope_freqs.weight", c.n_rot / 2, false));
  }
  if (c.arch->fused_gate_up) {  // LongRoPE's two sets (Phi-3): the context decides which is used
    SPARROW_ASSIGN_OR_RETURN(auto long_f, b.Vector("rope_factors_long.weight", c.n_rot / 2, false));
    SPARROW_ASSIGN_OR_RETURN(auto short_f,
                             b.Vector("rope_factors_short.weight", c.n_rot / 2, false));
    w.rope_freqs = c.rope_long_factors ? std::move(long_f) : std::move(short_f);
  }
  if (HasExpertBundles(file)) {
    if (c.n_expert == 0) {
      return Corrupt("a file of expert bundles of the architecture '" + std::string(c.arch->name) +
                     "', which has no experts");
    }
    SPARROW_ASSIGN_OR_RETURN(
        NeuronBundleLayout layout,
        ReadExpertBundleLayout(file, c.n_layer, c.n_expert, c.n_embd, c.n_ff_exp));
    w.bundles = std::make_shared<const NeuronBundleLayout>(std::move(layout));
    for (int64_t i = 0; i < c.n_layer; ++i) {
      b.MarkUsed(ExpertBundlesTensorName(i));
      b.MarkUsed(ExpertIdsTensorName(i));
    }
  } else if (HasNeuronBundles(file)) {
    if (c.n_expert > 0) {
      return Unsupported("a file of neuron bundles of the mixture-of-experts architecture '" +
                         std::string(c.arch->name) + "'");
    }
    SPARROW_ASSIGN_OR_RETURN(NeuronBundleLayout layout,
                             ReadNeuronBundleLayout(file, c.n_layer, c.n_ff, c.n_embd));
    w.bundles = std::make_shared<const NeuronBundleLayout>(std::move(layout));
    for (int64_t i = 0; i < c.n_layer; ++i) {
      b.MarkUsed(BundlesTensorName(i));
      b.MarkUsed(NeuronIdsTensorName(i));
    }
  }

  w.layers.resize(c.n_layer);
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    SPARROW_ASSIGN_OR_RETURN(l.attn_norm, b.Vector(p + "attn_norm.weight", c.n_embd, true));
    SPARROW_RETURN_IF_ERROR(BindQkv(b, p, c, c.arch->attn_qkv_bias, l));
    SPARROW_ASSIGN_OR_RETURN(
        l.wo, b.Matrix(p + "attn_output.weight", c.q_dim(), c.n_embd, "n_head*head_dim x n_embd"));
    // A family's own tensors are bound only for it: anywhere else they are unused, an error.
    if (c.arch->qk_norm) {
      const bool whole = c.arch->qk_norm_whole;
      SPARROW_ASSIGN_OR_RETURN(
          l.attn_q_norm, b.Vector(p + "attn_q_norm.weight", whole ? c.q_dim() : c.head_dim, true));
      SPARROW_ASSIGN_OR_RETURN(
          l.attn_k_norm, b.Vector(p + "attn_k_norm.weight", whole ? c.kv_dim() : c.head_dim, true));
    }
    if (c.arch->post_norms) {
      SPARROW_ASSIGN_OR_RETURN(l.attn_post_norm,
                               b.Vector(p + "post_attention_norm.weight", c.n_embd, true));
      SPARROW_ASSIGN_OR_RETURN(l.ffn_post_norm,
                               b.Vector(p + "post_ffw_norm.weight", c.n_embd, true));
    }
    SPARROW_ASSIGN_OR_RETURN(l.ffn_norm, b.Vector(p + "ffn_norm.weight", c.n_embd, true));
    if (c.n_expert > 0) {
      SPARROW_RETURN_IF_ERROR(w.bundles ? BindBundledExperts(b, p, c, l) : BindExperts(b, p, c, l));
      continue;
    }
    if (w.bundles) {
      SPARROW_RETURN_IF_ERROR(BindBundledFfn(b, p, c, *w.bundles, w.bundles->layers[i], l));
      continue;
    }
    if (c.arch->fused_gate_up) {
      // Phi-3: n_ff gate rows then n_ff up rows in one matrix; each is a view of its half.
      SPARROW_ASSIGN_OR_RETURN(l.ffn_up, b.Matrix(p + "ffn_up.weight", c.n_embd, 2 * c.n_ff,
                                                  "n_embd x 2*n_ff: gate rows, then up rows"));
      l.ffn_gate = RowRange(l.ffn_up, 0, c.n_ff);
      l.ffn_up = RowRange(l.ffn_up, c.n_ff, c.n_ff);
    } else {
      SPARROW_ASSIGN_OR_RETURN(l.ffn_gate,
                               b.Matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff, "n_embd x n_ff"));
      SPARROW_ASSIGN_OR_RETURN(l.ffn_up,
                               b.Matrix(p + "ffn_up.weight", c.n_embd, c.n_ff, "n_embd x n_ff"));
    }
    if (c.powerinfer) {
      SPARROW_RETURN_IF_ERROR(BindPowerInferFfn(b, p, c, l));
    } else {
      SPARROW_ASSIGN_OR_RETURN(l.ffn_down,
                               b.Matrix(p + "ffn_down.weight", c.n_ff, c.n_embd, "n_ff x n_embd"));
    }
  }
  SPARROW_RETURN_IF_ERROR(BindClassifierHead(b, file, c, &w.classifier));
  SPARROW_RETURN_IF_ERROR(b.CheckAllUsed(c));
  return w;
}

kernels::WeightMatrix RowRange(const kernels::WeightMatrix& m, int64_t first, int64_t n) {
  kernels::WeightMatrix r = m;
  r.data = static_cast<const uint8_t*>(m.data) + static_cast<size_t>(first) * m.row_stride_bytes;
  r.rows = n;
  return r;
}

kernels::WeightMatrix ExpertRows(const kernels::WeightMatrix& stacked, int64_t e,
                                 int64_t rows_per_expert) {
  return RowRange(stacked, e * rows_per_expert, rows_per_expert);
}

}  // namespace sparrow

namespace sparrow {

ExpertMatrices StackedExpert(const ModelConfig& c, const LayerWeights& l, int64_t e) {
  return {ExpertRows(l.ffn_gate_exps, e, c.n_ff_exp), ExpertRows(l.ffn_up_exps, e, c.n_ff_exp),
          ExpertRows(l.ffn_down_exps, e, c.n_embd)};
}

ExpertMatrices RecordExpert(const ModelConfig& c, const LayerBundles& lb, const uint8_t* record) {
  const int64_t d = c.n_embd, f = c.n_ff_exp;
  const kernels::WeightMatrix gate{lb.gate_type, record + lb.gate_offset, d, f,
                                   kernels::RowBytes(lb.gate_type, d)};
  if (lb.neuron_stride != 0) {
    return {gate,
            {lb.up_type, record + lb.up_offset, d, f, lb.neuron_stride},
            {lb.down_type, record + lb.down_offset, d, f, lb.neuron_stride},
            true};
  }
  return {gate,
          {lb.up_type, record + lb.up_offset, d, f, kernels::RowBytes(lb.up_type, d)},
          {lb.down_type, record + lb.down_offset, f, d, kernels::RowBytes(lb.down_type, f)}};
}

}  // namespace sparrow
