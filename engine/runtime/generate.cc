#include "engine/runtime/generate.h"

#include <chrono>

namespace sparrow {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<GenerateStats> Generate(ForwardPass& fp, KvCache& cache, std::span<const int32_t> prompt,
                               const GenerateOptions& opts,
                               const std::function<bool(int32_t)>& is_eog,
                               const std::function<bool(int32_t)>& on_token) {
  SPARROW_RETURN_IF_ERROR(opts.sampling.Validate());
  if (prompt.empty())
    return InvalidArgument("the prompt has no tokens (and the model adds no BOS)");
  if (static_cast<int64_t>(prompt.size()) >= cache.capacity()) {
    return OutOfRange("the prompt has " + std::to_string(prompt.size()) +
                      " tokens but the context holds " + std::to_string(cache.capacity()) +
                      "; raise the context size or shorten the prompt");
  }
  GenerateStats st;
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  Sampler sampler(opts.sampling);
  std::vector<float> logits;

  auto t0 = std::chrono::steady_clock::now();
  const int64_t n_batch = std::max<int64_t>(1, opts.n_batch);
  for (int64_t i = 0; i < st.prompt_tokens; i += n_batch) {
    const int64_t n = std::min(n_batch, st.prompt_tokens - i);
    SPARROW_RETURN_IF_ERROR(fp.Run(prompt.subspan(i, n), i, cache, false, &logits));
  }
  for (int32_t t : prompt) sampler.Accept(t);
  st.prompt_seconds = SecondsSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  int64_t pos = st.prompt_tokens;
  st.finish_reason = "length";
  while (st.generated_tokens < opts.max_tokens) {
    const int32_t tok = sampler.Sample(logits);
    sampler.Accept(tok);
    ++st.generated_tokens;
    const bool keep_going = on_token(tok);
    if (is_eog(tok) || !keep_going) {
      st.finish_reason = "stop";
      break;
    }
    if (st.generated_tokens == opts.max_tokens) break;
    if (pos >= cache.capacity()) {
      st.finish_reason = "context";
      break;
    }
    SPARROW_RETURN_IF_ERROR(fp.Run({&tok, 1}, pos, cache, false, &logits));
    ++pos;
  }
  st.generate_seconds = SecondsSince(t1);
  return st;
}

}  // namespace sparrow
