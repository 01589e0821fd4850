#pragma once
// Context shift: what to drop when a sequence outgrows the context, by llama.cpp's rules
// (examples/server/server.cpp at c392e509), so that a long chat keeps its system prompt and the
// newest turns. Pure functions; thread-safe.
#include <cstdint>
#include <vector>

namespace sparrow {

// The first `keep` tokens stay, the `discard` after them go.
struct ContextCut {
  int64_t keep = 0;
  int64_t discard = 0;
};

// A generating sequence of `n_past` computed positions (one more token waiting) in a context of
// n_ctx: n_keep (clamped to n_ctx - 4, as llama.cpp does) stays, half of the rest goes.
ContextCut PlanContextShift(int64_t n_past, int64_t n_keep, int64_t n_ctx);

// A prompt of n_ctx tokens or more cut to fit, as llama-server truncates one with context
// shift on: the first n_keep, then whole halves of the rest dropped from the oldest end, so at
// least one position is left for the answer. A shorter prompt comes back as is.
std::vector<int32_t> TruncatePrompt(const std::vector<int32_t>& prompt, int64_t n_keep,
                                    int64_t n_ctx);

}  // namespace sparrow
