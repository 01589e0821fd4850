#include "engine/runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace sparrow {
namespace {

SamplingParams Greedy() {
  SamplingParams p;
  p.temperature = 0;
  return p;
}

TEST(SamplerTest, GreedyPicksLargestAndLowestIdOnTies) {
  Sampler s(Greedy());
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(s.Sample(l), 1);
  EXPECT_EQ(ArgMax(l), 1);
}

TEST(SamplerTest, SameSeedSameTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 42;
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(i % 7) * 0.3f;
  Sampler a(p), b(p);
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 100; ++i) {
    ta.push_back(a.Sample(l));
    tb.push_back(b.Sample(l));
  }
  EXPECT_EQ(ta, tb);
  p.seed = 43;
  Sampler c(p);
  std::vector<int32_t> tc;
  for (int i = 0; i < 100; ++i) tc.push_back(c.Sample(l));
  EXPECT_NE(ta, tc);
}

TEST(SamplerTest, TopKRestrictsCandidates) {
  SamplingParams p;
  p.temperature = 5.0f;  // flatten, so only top-k keeps the draw inside the best two
  p.top_k = 2;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1;
  Sampler s(p);
  std::vector<float> l = {1.0f, 5.0f, 4.9f, 0.0f, 2.0f};
  for (int i = 0; i < 200; ++i) {
    int32_t t = s.Sample(l);
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
}

TEST(SamplerTest, TopPKeepsSmallestSetAboveP) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 0.5f;  // token 0 alone holds ~88% of the mass
  p.min_p = 0.0f;
  p.seed = 7;
  Sampler s(p);
  std::vector<float> l = {4.0f, 2.0f, 1.0f, 0.0f};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.Sample(l), 0);
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.2f;  // token 2 has p/p_max = e^-3 < 0.2
  p.seed = 3;
  Sampler s(p);
  std::vector<float> l = {3.0f, 3.0f, 0.0f};
  std::map<int32_t, int> seen;
  for (int i = 0; i < 300; ++i) ++seen[s.Sample(l)];
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_GT(seen[0], 50);
  EXPECT_GT(seen[1], 50);
}

TEST(SamplerTest, RepetitionPenaltyChangesGreedyChoice) {
  SamplingParams p = Greedy();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> l = {2.0f, 1.5f};
  EXPECT_EQ(s.Sample(l), 0);
  s.Accept(0);  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_EQ(s.Sample(l), 1);
}

TEST(SamplerTest, FrequencyAndPresencePenalties) {
  SamplingParams p = Greedy();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p);
  std::vector<float> l = {2.0f, 1.0f};
  s.Accept(0);
  EXPECT_EQ(s.Sample(l), 0);  // 2 - 0.5 - 0.25 = 1.25 > 1
  s.Accept(0);                // 2 - 1.0 - 0.25 = 0.75 < 1
  EXPECT_EQ(s.Sample(l), 1);
}

TEST(SamplerTest, PenaltyWindowForgetsOldTokens) {
  SamplingParams p = Greedy();
  p.presence_penalty = 2.0f;
  p.penalty_last_n = 2;
  Sampler s(p);
  std::vector<float> l = {2.0f, 1.0f, -5.0f};
  s.Accept(0);
  EXPECT_EQ(s.Sample(l), 1);
  s.Accept(2);
  s.Accept(2);  // token 0 has left the window
  EXPECT_EQ(s.Sample(l), 0);
}

// log-softmax by hand: logits {0, ln 2, ln 3, ln 2} have probabilities 1/8, 2/8, 3/8, 2/8.
TEST(SamplerTest, TokenLogprobIsTheLogSoftmaxWithTheBestAlternatives) {
  const std::vector<float> l = {0.0f, std::log(2.0f), std::log(3.0f), std::log(2.0f)};
  std::vector<std::pair<int32_t, float>> top;
  EXPECT_NEAR(TokenLogprob(l, 0, 0, &top), std::log(1.0 / 8), 1e-6);
  EXPECT_TRUE(top.empty()) << "no alternatives asked for";
  EXPECT_NEAR(TokenLogprob(l, 3, 3, &top), std::log(2.0 / 8), 1e-6);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 2);
  EXPECT_NEAR(top[0].second, std::log(3.0 / 8), 1e-6);
  EXPECT_EQ(top[1].first, 1) << "a tie goes to the lower id";
  EXPECT_EQ(top[2].first, 3);
  top.clear();
  EXPECT_NEAR(TokenLogprob(l, 1, 20, &top), std::log(2.0 / 8), 1e-6);
  EXPECT_EQ(top.size(), 4u) << "no more alternatives than the vocabulary";
}

TEST(SamplerTest, ValidateNamesTheParameter) {
  SamplingParams p;
  p.top_p = 1.5f;
  Status st = p.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("top_p"), std::string::npos);
  p = SamplingParams();
  p.temperature = -1;
  EXPECT_NE(p.Validate().message().find("temperature"), std::string::npos);
  EXPECT_TRUE(SamplingParams().Validate().ok());
}

}  // namespace
}  // namespace sparrow
