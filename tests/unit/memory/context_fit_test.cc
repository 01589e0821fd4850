// FitContext: the training context when one request of it fits; otherwise the longest context
// whose KV takes at most half of what the device offers beyond the fixed part, in granules,
// never under one granule; the reason names the figures.
#include "engine/memory/context_fit.h"

#include <gtest/gtest.h>

namespace sparrow {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Llama-3.2-1B's shape: 16 layers, K and V of 512 floats each per layer.
constexpr uint64_t kLlama1bKvPerToken = 2 * 16 * 512 * 4;

ContextFitInput Llama1b(uint64_t offer_mib, uint64_t fixed_mib) {
  ContextFitInput in;
  in.n_ctx_train = 131072;
  in.offer_bytes = offer_mib * kMiB;
  in.fixed_bytes = fixed_mib * kMiB;
  in.kv_bytes_per_token = kLlama1bKvPerToken;
  return in;
}

TEST(ContextFitTest, TheTrainingContextWhenOneRequestOfItFits) {
  const ContextFit f = FitContext(Llama1b(64 * 1024, 1024));
  EXPECT_EQ(f.n_ctx, 131072);
  EXPECT_TRUE(f.why.empty()) << f.why;
}

TEST(ContextFitTest, ALongContextIsCutToHalfOfTheRoomInGranules) {
  // 700 MiB offered, 300 MiB fixed: 200 MiB for one request's KV, 64 KiB a token.
  const ContextFit f = FitContext(Llama1b(700, 300));
  EXPECT_EQ(f.n_ctx, 3072);
  EXPECT_EQ(f.n_ctx % 256, 0);
  EXPECT_LE(static_cast<uint64_t>(f.n_ctx) * kLlama1bKvPerToken, 200 * kMiB);
  EXPECT_NE(f.why.find("131072 tokens) needs 8192 MiB"), std::string::npos) << f.why;
  EXPECT_NE(f.why.find("offers 700 MiB"), std::string::npos) << f.why;
}

TEST(ContextFitTest, NeverUnderOneGranuleNorOverTheTrainingContext) {
  EXPECT_EQ(FitContext(Llama1b(300, 400)).n_ctx, 256) << "fixed part over the offer";
  ContextFitInput short_train = Llama1b(10, 9);
  short_train.n_ctx_train = 128;
  EXPECT_EQ(FitContext(short_train).n_ctx, 128);
}

TEST(ContextFitTest, UnknownFiguresKeepTheTrainingContext) {
  EXPECT_EQ(FitContext(Llama1b(0, 300)).n_ctx, 131072) << "offer unknown";
  ContextFitInput no_train = Llama1b(64 * 1024, 300);
  no_train.n_ctx_train = 0;
  EXPECT_EQ(FitContext(no_train).n_ctx, 2048) << "the file does not say";
}

}  // namespace
}  // namespace sparrow
