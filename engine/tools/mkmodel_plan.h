#pragma once
// The tensors and metadata keys of a synthetic model: for each family the names, shapes and
// types llama.cpp d32676d7 loads (q/k norms, post norms, fused QKV and gate-up, rope tables,
// experts as 3-D tensors with their router), typed as llama-quantize would (QuantizedType).
// Pure functions of the spec; thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/gguf_header.h"
#include "engine/tools/mkmodel_generate.h"

namespace sparrow::tools {

// How a tensor's values are drawn: center + uniform(-half_width, half_width).
struct Fill {
  float center = 0.0f;
  float half_width = 0.0f;
};

// How rows are made: uniform draws, or one of a PWRI layer's coupled tensors (mkmodel_pwri.h).
enum class RowSource { kUniform, kPwriGate, kPwriFc1, kPwriFc2 };

struct PlannedTensor {
  std::string name;
  TensorType type = TensorType::kF32;
  int64_t cols = 0;
  int64_t rows = 0;  // all rows; of an expert tensor, rows per expert times experts
  Fill fill;
  RowSource source = RowSource::kUniform;
  int64_t layer = -1;
  int64_t experts = 0;        // > 0: a 3-D tensor {cols, rows / experts, experts}
  std::vector<float> values;  // fixed values (rope tables) instead of draws; rows == 1
  // Skewed expert popularity (SyntheticModelSpec::expert_skew): added to each row along the
  // model's shared direction (+-1 per column, SharedSign): the embedding's offset (a mean
  // hidden state every layer sees), and a router row's -popularity * ln(1 + rank), rank its
  // expert's place in a per-layer order of popularity (PopularityRank).
  float shared_offset = 0.0f;
  float popularity = 0.0f;
};

// The shared direction's sign at column c.
float SharedSign(int64_t c);
// Expert e's place (0: most popular) in layer il's order of n experts.
int64_t PopularityRank(int64_t e, int64_t il, int64_t n);

int64_t PredictorRank(const SyntheticModelSpec& spec);
PwriLayout LayoutOf(const SyntheticModelSpec& spec);

// The tensors in file order. InvalidArgument naming the tensor when a row length fits no type
// llama-quantize would choose.
Result<std::vector<PlannedTensor>> PlanTensors(const SyntheticModelSpec& spec, int64_t n_vocab,
                                               int64_t n_layer);

// general.* and <arch>.* keys (not the tokenizer's).
void AddModelMetadata(GgufHeader& h, const SyntheticModelSpec& spec, int64_t n_layer);

}  // namespace sparrow::tools
