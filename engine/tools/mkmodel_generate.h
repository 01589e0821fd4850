#pragma once
// WriteSyntheticModel: a GGUF model of a real shape with deterministic random weights and a
// real vocabulary, for benchmarks. Weights are scaled like a trained network's (uniform with
// variance 1/fan_in, norms near 1) so activations stay in a realistic range; the file is
// streamed to disk chunk by chunk, so memory use stays small even for a 13 GB F16 7B model.
// Thread-safe for distinct output paths.
#include <cstdint>
#include <string>

#include "engine/common/result.h"
#include "engine/tools/mkmodel_pwri.h"
#include "engine/tools/mkmodel_shapes.h"

namespace sparrow::tools {

struct SyntheticModelSpec {
  ModelShape shape;
  ModelFileType ftype = ModelFileType::kQ8_0;
  int64_t n_layer = 0;     // 0: the shape's depth; otherwise cut to this many layers
  std::string vocab_path;  // a GGUF whose tokenizer.* keys are copied
  std::string out_path;
  uint64_t seed = 1;
  int threads = 1;       // quantizing threads
  bool verbose = false;  // progress on stderr
  // PowerInfer's format (magic PWRI, ffn_down_t, predictor fc1/fc2; see mkmodel_pwri.h) with a
  // ReLU-gated FFN (arch llama) or dReLU (arch bamboo). Only for llama-architecture shapes.
  bool pwri = false;
  bool drelu = false;
  int64_t predictor_rank = 0;  // 0: n_embd / 8, at least 128, a multiple of 32
  double active = 0.5;         // mean share of neurons the predictor chooses
  HotProfile hot;
  // Mixture-of-experts shapes: > 0 makes some experts popular in every layer (a Zipf-like
  // skew: expert of rank r gets a logit bias of -expert_skew * ln(1 + r), through an offset
  // the embeddings share); 0: routing as random as the weights.
  double expert_skew = 0.0;
};

struct SyntheticModelSummary {
  int64_t n_vocab = 0;
  uint64_t n_params = 0;
  uint64_t data_bytes = 0;
  // PWRI files: the mean predicted-active share the construction aims at, and the share of
  // neurons that carries 80% of activations (over all layers).
  double active = 0.0;
  double hot_set_80 = 0.0;
};

Result<SyntheticModelSummary> WriteSyntheticModel(const SyntheticModelSpec& spec);

}  // namespace sparrow::tools
