#include "engine/sparse/ffn_factory.h"

#include "engine/runtime/dense_ffn.h"
#include "engine/sparse/sparse_ffn.h"

namespace sparrow {

std::unique_ptr<FeedForward> MakeDefaultFeedForward(const Model& model, kernels::ThreadPool* pool) {
  if (model.config().powerinfer) return std::make_unique<SparseFfn>(model, pool);
  return std::make_unique<DenseFfn>(model, pool);
}

}  // namespace sparrow
