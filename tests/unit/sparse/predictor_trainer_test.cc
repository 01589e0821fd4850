// TrainPredictor on a case with a known answer: labels that a rank-8 linear rule decides, which a
// rank-32 predictor must learn to a stated recall and precision; and the recall target's shift.
#include "engine/sparse/predictor_trainer.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/kernels/thread_pool.h"

namespace sparrow {
namespace {

struct Data {
  std::vector<float> x;
  std::vector<uint8_t> labels;
};

// y[i] = (U . V . x)[i] > 0.3 for a random rank-8 U.V: about a third of the neurons active.
Data LowRankRule(int64_t n, int64_t n_in, int64_t n_out, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(8 * n_in), u(n_out * 8);
  for (float& w : v) w = normal(rng) / std::sqrt(static_cast<float>(n_in));
  for (float& w : u) w = normal(rng) / std::sqrt(8.0f);
  Data d;
  d.x.resize(n * n_in);
  d.labels.resize(n * n_out);
  for (float& e : d.x) e = normal(rng);
  for (int64_t k = 0; k < n; ++k) {
    float h[8] = {};
    for (int r = 0; r < 8; ++r)
      for (int64_t j = 0; j < n_in; ++j) h[r] += v[r * n_in + j] * d.x[k * n_in + j];
    for (int64_t i = 0; i < n_out; ++i) {
      float z = 0;
      for (int r = 0; r < 8; ++r) z += u[i * 8 + r] * h[r];
      d.labels[k * n_out + i] = z > 0.3f;
    }
  }
  return d;
}

TEST(PredictorTrainerTest, LearnsALowRankRule) {
  const int64_t n = 6000, n_in = 32, n_out = 96;
  const Data d = LowRankRule(n, n_in, n_out, 7);
  PredictorTrainingOptions o;
  o.rank = 32;  // relu needs two hidden units per direction of the rule (+v and -v)
  o.epochs = 20;
  o.target_recall = 0;  // the plain classifier first
  kernels::ThreadPool pool(2);
  const TrainedPredictor t = TrainPredictor(d.x, d.labels, n, n_in, n_out, o, &pool);
  std::printf("[predictor] low-rank rule: recall %.3f precision %.3f predicted %.3f\n", t.recall,
              t.precision, t.predicted);
  EXPECT_GT(t.recall, 0.9);
  EXPECT_GT(t.precision, 0.8);
  EXPECT_EQ(t.fc1.size(), static_cast<size_t>(32 * n_in));
  EXPECT_EQ(t.fc2.size(), static_cast<size_t>(n_out * 32));
  EXPECT_EQ(t.bias.size(), static_cast<size_t>(n_out));

  // The same run is the same model (fixed seed and thread count).
  const TrainedPredictor again = TrainPredictor(d.x, d.labels, n, n_in, n_out, o, &pool);
  EXPECT_EQ(again.fc1, t.fc1);
  EXPECT_EQ(again.bias, t.bias);

  // Asking for a recall shifts the bias: at least that share of the held-out active pairs is
  // predicted, at the price of predicting more.
  o.target_recall = 0.99;
  const TrainedPredictor high = TrainPredictor(d.x, d.labels, n, n_in, n_out, o, &pool);
  EXPECT_GE(high.recall, 0.985);
  EXPECT_GE(high.predicted, t.predicted);
}

}  // namespace
}  // namespace sparrow
