// Pooling type rank: the classification head (RankScores) against a plain double-precision
// reference on random weights of awkward sizes, the pooler taking the head's row, and the head
// bound from a file (the synthetic Qwen3 reranker) or absent (stories260K).
#include "engine/runtime/rank_scores.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/model/model.h"
#include "engine/runtime/embedding_pooler.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

std::vector<float> Random(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

kernels::WeightMatrix F32Matrix(const std::vector<float>& values, int64_t cols, int64_t rows) {
  return {TensorType::kF32, values.data(), cols, rows, static_cast<size_t>(cols) * sizeof(float)};
}

// y = w . x + b, row by row in double.
std::vector<double> Affine(const std::vector<float>& w, const std::vector<float>& b,
                           const std::vector<double>& x) {
  const size_t cols = x.size(), rows = w.size() / cols;
  std::vector<double> y(rows);
  for (size_t r = 0; r < rows; ++r) {
    double s = b.empty() ? 0 : b[r];
    for (size_t k = 0; k < cols; ++k) s += double(w[r * cols + k]) * x[k];
    y[r] = s;
  }
  return y;
}

TEST(RankScoresTest, DenseTanhThenOutputMatchesTheReference) {
  constexpr int64_t kEmbd = 48, kLabels = 3;
  const auto dense = Random(kEmbd * kEmbd, 1), dense_b = Random(kEmbd, 2);
  const auto out = Random(kEmbd * kLabels, 3), out_b = Random(kLabels, 4);
  const auto row = Random(kEmbd, 5);
  ClassifierHead h;
  h.dense = F32Matrix(dense, kEmbd, kEmbd);
  h.dense_bias = dense_b;
  h.out = F32Matrix(out, kEmbd, kLabels);
  h.out_bias = out_b;
  std::vector<double> x(row.begin(), row.end());
  x = Affine(dense, dense_b, x);
  for (double& v : x) v = std::tanh(v);
  const std::vector<double> want = Affine(out, out_b, x);
  const std::vector<float> got = RankScores(h, row);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  // With a softmax (Qwen3): probabilities in the same order.
  h.softmax = true;
  const std::vector<float> p = RankScores(h, row);
  double sum = 0;
  for (double v : want) sum += std::exp(v);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], std::exp(want[i]) / sum, 1e-6) << i;
}

TEST(RankScoresTest, DenseOnlyGivesItsFirstComponent) {
  constexpr int64_t kEmbd = 32;
  const auto dense = Random(kEmbd * kEmbd, 7);
  const auto row = Random(kEmbd, 8);
  ClassifierHead h;
  h.dense = F32Matrix(dense, kEmbd, kEmbd);
  const std::vector<double> want = Affine(dense, {}, std::vector<double>(row.begin(), row.end()));
  const std::vector<float> got = RankScores(h, row);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NEAR(got[0], std::tanh(want[0]), 1e-5);
}

TEST(RankScoresTest, PoolerTakesTheHeadsRowAcrossChunks) {
  constexpr int64_t kEmbd = 32, kTokens = 5;
  const auto out = Random(kEmbd, 9);
  const auto rows = Random(kEmbd * kTokens, 10);
  for (PoolingType which : {PoolingType::kCls, PoolingType::kLast}) {
    ClassifierHead h;
    h.out = F32Matrix(out, kEmbd, 1);
    h.row = which;
    EmbeddingPooler p(h, kEmbd, kTokens);
    const bool every = which == PoolingType::kCls;
    EXPECT_EQ(p.wants_every_row(), every);
    // Chunks of 3 and 2 tokens: every row of each, or only each chunk's last.
    const std::span<const float> all(rows);
    if (every) {
      p.Add(0, 3, all.subspan(0, 3 * kEmbd));
      p.Add(3, 2, all.subspan(3 * kEmbd, 2 * kEmbd));
    } else {
      p.Add(0, 3, all.subspan(2 * kEmbd, kEmbd));
      p.Add(3, 2, all.subspan(4 * kEmbd, kEmbd));
    }
    const size_t t = every ? 0 : kTokens - 1;
    const std::vector<float> want =
        RankScores(h, std::vector<float>(rows.begin() + t * kEmbd, rows.begin() + (t + 1) * kEmbd));
    EXPECT_EQ(p.Finish(), want) << PoolingName(which);  // not normalised
  }
}

TEST(RankScoresTest, HeadIsBoundFromTheFile) {
  if (!testing::FileExists(testing::ModelPath("stories260K.gguf"))) GTEST_SKIP();
  const std::string path = testing::TempPath("synth-qwen3rerank.gguf");
  ASSERT_TRUE(testing::WriteArchModel({testing::ArchFamily::kQwen3Rerank, 1}, path).ok());
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ClassifierHead& h = (*m)->weights().classifier;
  EXPECT_TRUE(h.present());
  EXPECT_EQ(h.dense.data, nullptr);
  EXPECT_EQ(h.n_scores(), 2);
  EXPECT_EQ(h.labels, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(h.row, PoolingType::kLast);
  EXPECT_TRUE(h.softmax);
  EXPECT_EQ(FilePooling((*m)->file()), PoolingType::kRank);

  auto plain = Model::Load(testing::ModelPath("stories260K.gguf"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->weights().classifier.present());
}

}  // namespace
}  // namespace sparrow
