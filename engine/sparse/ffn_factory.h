#pragma once
// Chooses the FFN a model runs with: the sparse one where the model file carries what it needs
// (PowerInfer's predictors and transposed down projection), the dense one otherwise.
#include <memory>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

std::unique_ptr<FeedForward> MakeDefaultFeedForward(const Model& model, kernels::ThreadPool* pool);

}  // namespace sparrow
