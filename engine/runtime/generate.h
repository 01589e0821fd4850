#pragma once
// Generate: the single-sequence loop used by the CLI and tests: prefill the prompt in
// batches, then sample and feed one token at a time until end-of-generation, a stop from
// the caller, the token limit or a full context.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "engine/common/result.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/sampler.h"

namespace sparrow {

struct GenerateOptions {
  int64_t max_tokens = 128;  // generated tokens at most
  int64_t n_batch = 512;     // prompt tokens per forward call
  SamplingParams sampling;
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prompt_seconds = 0;
  double generate_seconds = 0;  // from the first sampled token to the last
  std::string finish_reason;    // "stop" (end-of-generation or caller), "length", "context"
};

// `is_eog(id)` says whether a token ends generation (it is still reported to on_token).
// `on_token(id)` receives each sampled token; returning false stops generation.
Result<GenerateStats> Generate(ForwardPass& fp, KvCache& cache, std::span<const int32_t> prompt,
                               const GenerateOptions& opts,
                               const std::function<bool(int32_t)>& is_eog,
                               const std::function<bool(int32_t)>& on_token);

}  // namespace sparrow
