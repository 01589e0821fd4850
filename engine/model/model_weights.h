#pragma once
// ModelWeights: the tensors of a transformer bound by role, with every shape and type checked
// against the ModelConfig. Matrices point into the mmap'ed file (no copy); small vectors
// (norms, biases) are converted to f32 once. Immutable after binding; thread-safe to read.
#include <memory>
#include <vector>

#include "engine/common/result.h"
#include "engine/kernels/matmul.h"
#include "engine/model/classifier_head.h"
#include "engine/model/model_config.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {

class GgufFile;

struct LayerWeights {
  std::vector<float> attn_norm;
  kernels::WeightMatrix wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;                     // empty when the architecture has no bias
  std::vector<float> attn_q_norm, attn_k_norm;       // head_dim each; empty without QK-norm
  std::vector<float> attn_post_norm, ffn_post_norm;  // n_embd each; empty without post norms
  std::vector<float> ffn_norm;
  // Encoders (ArchSpec::encoder): attn_output's bias, and the LayerNorms after attention's and
  // the FFN's residual sums (attn_output_norm, layer_output_norm) with their biases; attn_norm
  // and ffn_norm are then empty. The FFN's biases: empty where the file has none.
  std::vector<float> bo;
  std::vector<float> attn_out_norm, attn_out_norm_b, layer_out_norm, layer_out_norm_b;
  std::vector<float> ffn_up_b, ffn_down_b;
  // Mixture of experts: the router (n_expert rows of n_embd) and every expert's matrices in one
  // matrix each, expert e's rows after expert e-1's: gate and up n_expert * n_ff_exp rows of
  // n_embd, down n_expert * n_embd rows of n_ff_exp (ExpertRows takes one expert's). The dense
  // FFN matrices below are then absent.
  kernels::WeightMatrix ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps;
  kernels::WeightMatrix ffn_gate, ffn_up;
  // n_embd rows of n_ff; absent (data null) in PowerInfer files and files of neuron bundles.
  kernels::WeightMatrix ffn_down;
  // PowerInfer and bundled files: the down projection transposed (one row of n_embd per neuron).
  // PowerInfer semantics: the activation predictor logits = pred_fc2 . relu(pred_fc1 . x), x the
  // residual before the FFN norm (pred_fc1: rank rows of n_embd, pred_fc2: n_ff rows of rank).
  // Absent elsewhere. In bundled files gate, up and down_t rows are one record apart.
  kernels::WeightMatrix ffn_down_t, pred_fc1, pred_fc2;
};

struct ModelWeights {
  kernels::WeightMatrix token_embd;  // n_vocab rows of n_embd
  std::vector<float> rope_freqs;     // n_rot/2 per-dimension RoPE divisors (Llama 3.1); or empty
  std::vector<float> output_norm;
  kernels::WeightMatrix output;  // token_embd when the file has no output.weight (tied)
  bool tied_output = false;
  // Encoders: no output norm or head (output.data null); instead the input rows' token type 0
  // row (empty without token_types), the position rows (with ArchSpec::abs_positions: n_ctx_train
  // rows of n_embd) and the input LayerNorm.
  std::vector<float> token_type0;
  kernels::WeightMatrix position_embd;
  std::vector<float> token_embd_norm, token_embd_norm_b;
  bool has_output() const { return output.data != nullptr; }
  std::vector<LayerWeights> layers;
  ClassifierHead classifier;  // rerankers' cls / cls.output tensors; absent elsewhere
  // Files converted to neuron bundles (neuron_bundles.h) or, for mixture-of-experts models, to
  // expert bundles (expert_bundles.h; layout->experts): where each layer's records are. The
  // stacked expert matrices are then absent (data null).
  std::shared_ptr<const NeuronBundleLayout> bundles;
};

// Rows [first, first + n) of a matrix, as a matrix (fused q/k/v and gate/up halves are views).
kernels::WeightMatrix RowRange(const kernels::WeightMatrix& m, int64_t first, int64_t n);
// Expert e's `rows_per_expert` rows of a stacked expert matrix.
kernels::WeightMatrix ExpertRows(const kernels::WeightMatrix& stacked, int64_t e,
                                 int64_t rows_per_expert);

// One expert's three matrices: gate and up n_ff_exp rows of n_embd, down n_embd rows of n_ff_exp.
struct ExpertMatrices {
  kernels::WeightMatrix gate, up, down;
  // down holds one row per neuron (n_ff_exp rows of n_embd: neuron bundles, expert_bundles.h).
  bool down_rows = false;
};
// Expert e of a layer's stacked tensors.
ExpertMatrices StackedExpert(const ModelConfig& c, const LayerWeights& l, int64_t e);
// The expert whose record (expert_bundles.h) starts at `record`.
ExpertMatrices RecordExpert(const ModelConfig& c, const LayerBundles& lb, const uint8_t* record);

// Binds the tensors of `file` (which must outlive the result). Errors name the tensor and
// the expected versus actual shape or type; a tensor the architecture does not use is an error
// too (a model computed without it would be wrong without a word).
Result<ModelWeights> BindModelWeights(const GgufFile& file, const ModelConfig& config);

}  // namespace sparrow
