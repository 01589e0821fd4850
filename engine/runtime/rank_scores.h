#pragma once
// RankScores: a pooled row through a reranker's classification head (ClassifierHead), with
// llama.cpp's arithmetic (kernels::MatMul for the matrices, tanh after the dense layer, a
// softmax over the labels where the head asks): the scores of pooling type rank. Pure function;
// thread-safe.
#include <span>
#include <vector>

#include "engine/model/classifier_head.h"

namespace sparrow {

// `row`: n_embd floats (the final normed hidden state of the head's token). Returns
// head.n_scores() floats; for a Qwen3 reranker the first is P(yes).
std::vector<float> RankScores(const ClassifierHead& head, std::span<const float> row);

}  // namespace sparrow
