#include "engine/sparse/predictor_trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/common/check.h"
#include "engine/kernels/thread_pool.h"

namespace sparrow {
namespace {

// Parameters and their Adam moments, flattened: fc1, fc2, bias.
struct Params {
  std::vector<float> w, m, v;
  explicit Params(size_t n) : w(n), m(n, 0.0f), v(n, 0.0f) {}
};

struct Shape {
  int64_t n_in, rank, n_out;
  size_t fc1() const { return static_cast<size_t>(rank * n_in); }
  size_t fc2() const { return static_cast<size_t>(n_out * rank); }
  size_t total() const { return fc1() + fc2() + static_cast<size_t>(n_out); }
};

// Forward pass of one sample: hidden (rank) and logits (n_out).
void Forward(const Shape& s, const float* w, const float* x, float* hidden, float* logits) {
  const float* fc1 = w;
  const float* fc2 = w + s.fc1();
  const float* bias = fc2 + s.fc2();
  for (int64_t r = 0; r < s.rank; ++r) {
    float acc = 0;
    for (int64_t i = 0; i < s.n_in; ++i) acc += fc1[r * s.n_in + i] * x[i];
    hidden[r] = acc > 0 ? acc : 0;
  }
  for (int64_t o = 0; o < s.n_out; ++o) {
    float acc = bias[o];
    for (int64_t r = 0; r < s.rank; ++r) acc += fc2[o * s.rank + r] * hidden[r];
    logits[o] = acc;
  }
}

}  // namespace

TrainedPredictor TrainPredictor(const std::vector<float>& x, const std::vector<uint8_t>& labels,
                                int64_t n_samples, int64_t n_in, int64_t n_out,
                                const PredictorTrainingOptions& o, kernels::ThreadPool* pool) {
  SPARROW_CHECK(n_samples > 1 && o.rank > 0 && o.batch > 0);
  SPARROW_CHECK(x.size() == static_cast<size_t>(n_samples * n_in));
  SPARROW_CHECK(labels.size() == static_cast<size_t>(n_samples * n_out));
  const Shape s{n_in, o.rank, n_out};
  Params p(s.total());
  std::mt19937_64 rng(o.seed);
  {
    // He initialisation for the ReLU layer, small for the output layer.
    std::normal_distribution<float> n1(0.0f, std::sqrt(2.0f / static_cast<float>(n_in)));
    std::normal_distribution<float> n2(0.0f, 1.0f / std::sqrt(static_cast<float>(o.rank)));
    for (size_t i = 0; i < s.fc1(); ++i) p.w[i] = n1(rng);
    for (size_t i = 0; i < s.fc2(); ++i) p.w[s.fc1() + i] = n2(rng);
  }
  // Samples in random order; the last `holdout` share is never trained on.
  std::vector<int64_t> order(n_samples);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const auto n_test = std::max<int64_t>(1, static_cast<int64_t>(o.holdout * n_samples));
  const int64_t n_train = n_samples - n_test;

  int64_t active = 0;
  for (int64_t k = 0; k < n_train; ++k) {
    const uint8_t* y = &labels[order[k] * n_out];
    active += std::count(y, y + n_out, 1);
  }
  const double pairs = static_cast<double>(n_train) * static_cast<double>(n_out);
  const auto pos_weight =
      static_cast<float>(active > 0 ? (pairs - static_cast<double>(active)) / active : 1.0);

  const int n_threads = pool ? pool->size() : 1;
  std::vector<std::vector<float>> grads(n_threads, std::vector<float>(s.total()));
  std::vector<std::vector<float>> scratch(n_threads, std::vector<float>(2 * o.rank + 2 * n_out));
  int64_t step = 0;
  const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.begin() + n_train, rng);
    for (int64_t b0 = 0; b0 < n_train; b0 += o.batch) {
      const int64_t b1 = std::min(n_train, b0 + o.batch);
      for (auto& g : grads) std::fill(g.begin(), g.end(), 0.0f);
      // Each thread sums the gradients of a slice of the batch; the slices are fixed by the
      // thread count, so a run is repeatable.
      auto slice = [&](int64_t task, int) {
        const int64_t per = (b1 - b0 + n_threads - 1) / n_threads;
        const int64_t k0 = b0 + task * per, k1 = std::min(b1, k0 + per);
        float* g = grads[task].data();
        float* hidden = scratch[task].data();
        float* logits = hidden + o.rank;
        float* dh = logits + n_out;
        float* dz = dh + o.rank;
        const float* fc2 = p.w.data() + s.fc1();
        for (int64_t k = k0; k < k1; ++k) {
          const float* xs = &x[order[k] * n_in];
          const uint8_t* y = &labels[order[k] * n_out];
          Forward(s, p.w.data(), xs, hidden, logits);
          for (int64_t i = 0; i < n_out; ++i) {
            const float sig = 1.0f / (1.0f + std::exp(-logits[i]));
            dz[i] = y[i] ? pos_weight * (sig - 1.0f) : sig;
          }
          std::fill(dh, dh + o.rank, 0.0f);
          float* g2 = g + s.fc1();
          float* gb = g2 + s.fc2();
          for (int64_t i = 0; i < n_out; ++i) {
            if (dz[i] == 0.0f) continue;
            gb[i] += dz[i];
            for (int64_t r = 0; r < o.rank; ++r) {
              g2[i * o.rank + r] += dz[i] * hidden[r];
              dh[r] += dz[i] * fc2[i * o.rank + r];
            }
          }
          for (int64_t r = 0; r < o.rank; ++r) {
            if (hidden[r] <= 0) continue;
            for (int64_t j = 0; j < n_in; ++j) g[r * n_in + j] += dh[r] * xs[j];
          }
        }
      };
      if (pool && n_threads > 1) {
        pool->ParallelFor(n_threads, slice);
      } else {
        slice(0, 0);
      }
      ++step;
      const float inv = 1.0f / static_cast<float>(b1 - b0);
      const float c1 = 1.0f - std::pow(beta1, static_cast<float>(step));
      const float c2 = 1.0f - std::pow(beta2, static_cast<float>(step));
      for (size_t i = 0; i < s.total(); ++i) {
        float g = 0;
        for (int t = 0; t < n_threads; ++t) g += grads[t][i];
        g *= inv;
        p.m[i] = beta1 * p.m[i] + (1 - beta1) * g;
        p.v[i] = beta2 * p.v[i] + (1 - beta2) * g * g;
        p.w[i] -= o.learning_rate * (p.m[i] / c1) / (std::sqrt(p.v[i] / c2) + eps);
      }
    }
  }

  TrainedPredictor t;
  t.n_in = n_in;
  t.rank = o.rank;
  t.n_out = n_out;
  t.fc1.assign(p.w.begin(), p.w.begin() + s.fc1());
  t.fc2.assign(p.w.begin() + s.fc1(), p.w.begin() + s.fc1() + s.fc2());
  t.bias.assign(p.w.begin() + s.fc1() + s.fc2(), p.w.end());
  std::vector<float> hidden(o.rank), logits(n_test * n_out);
  for (int64_t k = n_train; k < n_samples; ++k) {
    Forward(s, p.w.data(), &x[order[k] * n_in], hidden.data(), &logits[(k - n_train) * n_out]);
  }
  float shift = 0;
  if (o.target_recall > 0) {
    std::vector<float> positive;
    for (int64_t k = n_train; k < n_samples; ++k) {
      const uint8_t* y = &labels[order[k] * n_out];
      for (int64_t i = 0; i < n_out; ++i) {
        if (y[i]) positive.push_back(logits[(k - n_train) * n_out + i]);
      }
    }
    if (!positive.empty()) {
      const auto cut =
          static_cast<size_t>((1 - o.target_recall) * static_cast<double>(positive.size()));
      std::nth_element(positive.begin(), positive.begin() + cut, positive.end());
      shift = positive[cut];
      for (float& b : t.bias) b -= shift;
    }
  }
  int64_t tp = 0, fp = 0, fn = 0;
  for (int64_t k = n_train; k < n_samples; ++k) {
    const uint8_t* y = &labels[order[k] * n_out];
    for (int64_t i = 0; i < n_out; ++i) {
      const bool predicted = logits[(k - n_train) * n_out + i] - shift >= 0;
      tp += predicted && y[i];
      fp += predicted && !y[i];
      fn += !predicted && y[i];
    }
  }
  t.recall = tp + fn > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 1;
  t.precision = tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 1;
  t.predicted = static_cast<double>(tp + fp) / (static_cast<double>(n_test) * n_out);
  return t;
}

}  // namespace sparrow
