#pragma once
// ClassifierHead: a reranker's (cross-encoder's) classification head, as llama.cpp builds it for
// pooling type rank: one token's final normed hidden row (`row`), through `cls.weight` +
// `cls.bias` and tanh where the file has them (BERT-style cross-encoders: bge-reranker), then
// `cls.output.weight` + `cls.output.bias` where present (one row per label of
// `<arch>.classifier.output_labels`, default one), then for Qwen3 a softmax over the labels
// (Qwen3-Reranker: rows "yes", "no" taken from its LM head, so the first score is P(yes)).
// Bound with the model's weights (BindModelWeights); immutable, thread-safe to read.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/model/pooling_type.h"

namespace sparrow {

struct ClassifierHead {
  kernels::WeightMatrix dense;          // cls.weight: n_embd rows of n_embd; data null when absent
  std::vector<float> dense_bias;        // cls.bias, or empty
  kernels::WeightMatrix out;            // cls.output.weight: a row per label; data null when absent
  std::vector<float> out_bias;          // cls.output.bias, or empty
  std::vector<std::string> labels;      // the output labels ("yes", "no"); empty when unnamed
  PoolingType row = PoolingType::kCls;  // whose row: kCls (the first token's) or kLast
  bool softmax = false;                 // the scores as probabilities over the labels

  // Whether the model can rank at all: a model without either matrix has no head.
  bool present() const { return dense.data != nullptr || out.data != nullptr; }
  // Scores per pooled row: one per cls.output row, else one (llama.cpp's n_cls_out).
  int64_t n_scores() const { return out.data != nullptr ? out.rows : 1; }
};

}  // namespace sparrow
