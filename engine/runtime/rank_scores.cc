#include "engine/runtime/rank_scores.h"

#include <algorithm>
#include <cmath>

#include "engine/common/check.h"

namespace sparrow {
namespace {

// y = w . x + bias (bias may be empty).
std::vector<float> Affine(const kernels::WeightMatrix& w, const std::vector<float>& bias,
                          const std::vector<float>& x) {
  SPARROW_CHECK(static_cast<int64_t>(x.size()) == w.cols);
  std::vector<float> y(static_cast<size_t>(w.rows));
  kernels::MatMul(w, x.data(), 1, w.cols, y.data(), w.rows, nullptr);
  for (size_t i = 0; i < bias.size(); ++i) y[i] += bias[i];
  return y;
}

}  // namespace

std::vector<float> RankScores(const ClassifierHead& head, std::span<const float> row) {
  SPARROW_CHECK(head.present());
  std::vector<float> cur(row.begin(), row.end());
  if (head.dense.data != nullptr) {
    cur = Affine(head.dense, head.dense_bias, cur);
    for (float& v : cur) v = std::tanh(v);
  }
  if (head.out.data != nullptr) cur = Affine(head.out, head.out_bias, cur);
  // Without cls.output, llama.cpp reads the first n_cls_out (one) components.
  cur.resize(static_cast<size_t>(head.n_scores()));
  if (head.softmax) {
    const float max = *std::max_element(cur.begin(), cur.end());
    double sum = 0;
    for (float& v : cur) {
      v = std::exp(v - max);
      sum += v;
    }
    for (float& v : cur) v = static_cast<float>(v / sum);
  }
  return cur;
}

}  // namespace sparrow
