#pragma once
// The FFN a model runs with when nothing is asked for: sparse where the model file carries what
// it needs (PowerInfer's predictors and transposed down projection), dense otherwise. Tools and
// the server that take --sparsity build theirs with MakeSparsePlan / MakeFeedForward.
#include <memory>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

std::unique_ptr<FeedForward> MakeDefaultFeedForward(const Model& model, kernels::ThreadPool* pool);

}  // namespace sparrow
