// `sparrow perplexity`'s scoring on hand-made cases (its figures against llama-perplexity's on
// the trained KJV model are tests/golden/kjv_perplexity_test.cc).
#include "engine/tools/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sparrow::tools {
namespace {

TEST(PerplexityTest, NegativeLogLikelihoodIsMinusLogSoftmax) {
  const float logits[4] = {1.0f, 2.0f, 3.0f, -1.0f};
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  for (int t = 0; t < 4; ++t)
    EXPECT_NEAR(NegativeLogLikelihood(logits, 4, t), std::log(sum) - logits[t], 1e-6) << t;
  // Large logits do not overflow: the maximum is taken out first.
  const float big[2] = {1000.0f, 1000.0f};
  EXPECT_NEAR(NegativeLogLikelihood(big, 2, 0), std::log(2.0), 1e-9);
}

}  // namespace
}  // namespace sparrow::tools
