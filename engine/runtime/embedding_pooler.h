#pragma once
// EmbeddingPooler: gathers one prompt's final normed hidden states as the forward pass computes
// them, chunk after chunk, and makes its embedding: pooled (PoolingType) and L2-normalised, as
// llama.cpp's llama-embedding --embd-normalize 2 and OpenAI's embeddings are; or, for pooling
// rank, the head's token's row through the model's ClassifierHead (RankScores), not normalised.
// Memory: n_embd floats (n_tokens * n_embd for kNone). Not thread-safe.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/classifier_head.h"
#include "engine/model/pooling_type.h"

namespace sparrow {

class EmbeddingPooler {
 public:
  // `type` other than kRank.
  EmbeddingPooler(PoolingType type, int64_t n_embd, int64_t n_tokens);
  // Pooling type rank with `head` (present; the model's, which outlives the pooler).
  EmbeddingPooler(const ClassifierHead& head, int64_t n_embd, int64_t n_tokens);

  // Which rows the forward pass must hand over: every token's (mean, cls, none, rank by the
  // first token) or only each chunk's last (last, rank by the last token).
  bool wants_every_row() const { return row_ != PoolingType::kLast; }

  // The rows of the chunk at positions pos..pos + n - 1 (one row of n_embd each; only the last
  // position's when !wants_every_row()). A chunk at position 0 starts over: a sequence computed
  // again after a preemption hands its rows again.
  void Add(int64_t pos, int64_t n, std::span<const float> rows);

  // The embedding: n_embd floats (n_tokens rows of them for kNone), each vector of unit length;
  // for rank, head.n_scores() scores.
  std::vector<float> Finish() const;

 private:
  PoolingType row_;                       // how the rows are pooled (rank: the head's row)
  const ClassifierHead* head_ = nullptr;  // rank only
  int64_t n_embd_, n_tokens_;
  std::vector<double> sum_;  // mean: the sum so far; cls, last: the row
  std::vector<float> rows_;  // none: every row
  int64_t count_ = 0;        // mean: rows summed
};

// Scales `v` to unit Euclidean length (llama.cpp's common_embd_normalize, norm 2); a zero vector
// stays zero.
void NormalizeL2(std::span<float> v);

}  // namespace sparrow
