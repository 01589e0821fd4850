#include "engine/runtime/embedding_pooler.h"

#include <algorithm>
#include <cmath>

#include "engine/common/check.h"
#include "engine/runtime/rank_scores.h"

namespace sparrow {

EmbeddingPooler::EmbeddingPooler(PoolingType type, int64_t n_embd, int64_t n_tokens)
    : row_(type), n_embd_(n_embd), n_tokens_(n_tokens) {
  SPARROW_CHECK(n_embd > 0 && n_tokens > 0 && type != PoolingType::kRank);
  if (row_ == PoolingType::kNone) {
    rows_.assign(static_cast<size_t>(n_tokens * n_embd), 0.0f);
  } else {
    sum_.assign(static_cast<size_t>(n_embd), 0.0);
  }
}

EmbeddingPooler::EmbeddingPooler(const ClassifierHead& head, int64_t n_embd, int64_t n_tokens)
    : row_(head.row), head_(&head), n_embd_(n_embd), n_tokens_(n_tokens) {
  SPARROW_CHECK(n_embd > 0 && n_tokens > 0 && head.present());
  SPARROW_CHECK(row_ == PoolingType::kCls || row_ == PoolingType::kLast);
  sum_.assign(static_cast<size_t>(n_embd), 0.0);
}

void EmbeddingPooler::Add(int64_t pos, int64_t n, std::span<const float> rows) {
  const int64_t given = wants_every_row() ? n : 1;
  SPARROW_CHECK(pos >= 0 && n > 0 && pos + n <= n_tokens_);
  SPARROW_CHECK(static_cast<int64_t>(rows.size()) == given * n_embd_);
  if (pos == 0) {
    std::fill(sum_.begin(), sum_.end(), 0.0);
    count_ = 0;
  }
  switch (row_) {
    case PoolingType::kNone:
      std::copy(rows.begin(), rows.end(), rows_.begin() + pos * n_embd_);
      break;
    case PoolingType::kMean:
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t i = 0; i < n_embd_; ++i) sum_[i] += rows[t * n_embd_ + i];
      }
      count_ += n;
      break;
    case PoolingType::kCls:
      if (pos == 0) std::copy_n(rows.begin(), n_embd_, sum_.begin());
      break;
    case PoolingType::kLast:
      std::copy_n(rows.begin(), n_embd_, sum_.begin());
      break;
    case PoolingType::kRank:  // never a row policy: the head's row is kCls or kLast
      SPARROW_CHECK(false && "rank is not a row policy");
      break;
  }
}

std::vector<float> EmbeddingPooler::Finish() const {
  std::vector<float> out;
  if (row_ == PoolingType::kNone) {
    out = rows_;
    for (int64_t t = 0; t < n_tokens_; ++t) {
      NormalizeL2({&out[t * n_embd_], static_cast<size_t>(n_embd_)});
    }
    return out;
  }
  out.resize(static_cast<size_t>(n_embd_));
  const double scale = row_ == PoolingType::kMean && count_ > 0 ? 1.0 / count_ : 1.0;
  for (int64_t i = 0; i < n_embd_; ++i) out[i] = static_cast<float>(sum_[i] * scale);
  if (head_ != nullptr) return RankScores(*head_, out);
  NormalizeL2(out);
  return out;
}

void NormalizeL2(std::span<float> v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  sum = std::sqrt(sum);
  const float norm = sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (float& x : v) x *= norm;
}

}  // namespace sparrow
