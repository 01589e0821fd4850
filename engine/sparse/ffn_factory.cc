#include "engine/sparse/ffn_factory.h"

#include "engine/common/check.h"
#include "engine/sparse/sparse_plan.h"

namespace sparrow {

std::unique_ptr<FeedForward> MakeDefaultFeedForward(const Model& model, kernels::ThreadPool* pool) {
  // Sparsity 0 cannot fail: dense for ordinary files, the file's predictors for PowerInfer's.
  auto plan = MakeSparsePlan(model, SparsityOptions{}, pool);
  SPARROW_CHECK(plan.ok());
  return MakeFeedForward(model, std::move(plan).value(), pool);
}

}  // namespace sparrow
