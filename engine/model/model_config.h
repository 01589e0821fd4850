#pragma once
// ModelConfig: the hyper-parameters of a transformer, read and checked from GGUF metadata.
#include <cstdint>
#include <string>

#include "engine/common/result.h"
#include "engine/model/architecture.h"

namespace sparrow {

class GgufFile;

struct ModelConfig {
  const ArchSpec* arch = nullptr;
  std::string name;  // general.name, may be empty
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  // {arch}.context_length
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // {arch}.attention.key_length, default n_embd / n_head
  int64_t n_rot = 0;     // {arch}.rope.dimension_count, default head_dim
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
  FfnKind ffn_kind = FfnKind::kSwiGlu;
  // PowerInfer's format: the file carries per-layer predictors and the down projection
  // transposed; a neuron runs when its predictor logit >= sparse_threshold.
  bool powerinfer = false;
  float sparse_threshold = 0.0f;  // powerinfer.sparse_threshold

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Reads and validates the hyper-parameters; errors name the metadata key at fault.
Result<ModelConfig> ReadModelConfig(const GgufFile& file);

}  // namespace sparrow
