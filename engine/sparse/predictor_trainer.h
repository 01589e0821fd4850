#pragma once
// TrainPredictor: fits a per-layer activation predictor, logits = fc2 . relu(fc1 . x) + bias, to
// calibration samples (x: the residual stream before the FFN; label: the neuron was active), the
// Deja Vu / PowerInfer recipe PowerInfer never published: weighted binary cross-entropy (active
// neurons weighted by inactive/active, so recall is not traded away for the majority class),
// Adam, mini-batches spread over the thread pool. Deterministic for a seed and thread count.
#include <cstdint>
#include <vector>

namespace sparrow {
namespace kernels {
class ThreadPool;
}

struct PredictorTrainingOptions {
  int64_t rank = 64;
  int epochs = 4;
  int64_t batch = 256;
  float learning_rate = 2e-3f;
  double holdout = 0.1;  // share of samples kept out of training, for recall and precision
  // The bias is then shifted so that this share of the held-out active pairs is predicted
  // (0: no shift): missing a neuron costs quality, computing an extra one only time.
  double target_recall = 0.9;
  uint64_t seed = 1;
};

struct TrainedPredictor {
  int64_t n_in = 0, rank = 0, n_out = 0;
  std::vector<float> fc1;   // rank rows of n_in
  std::vector<float> fc2;   // n_out rows of rank
  std::vector<float> bias;  // n_out
  // On the held-out samples, neuron i predicted active when its logit >= 0:
  double recall = 0;     // of the active (neuron, token) pairs, the share predicted
  double precision = 0;  // of the predicted pairs, the share active
  double predicted = 0;  // share of pairs predicted active
};

// x: n_samples rows of n_in; labels: n_samples rows of n_out (1 = active).
TrainedPredictor TrainPredictor(const std::vector<float>& x, const std::vector<uint8_t>& labels,
                                int64_t n_samples, int64_t n_in, int64_t n_out,
                                const PredictorTrainingOptions& options, kernels::ThreadPool* pool);

}  // namespace sparrow
