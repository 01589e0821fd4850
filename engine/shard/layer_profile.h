#pragma once
// ProfileLayerDecodeMs: how long each of a model's layers takes this device for one decoded
// token (median of three runs after one that warms the weights' pages; layers of the same bytes
// and attention kind are timed once): what EdgeShard's planner places layers by.
#include <vector>

#include "engine/model/model.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

std::vector<double> ProfileLayerDecodeMs(const Model& model, kernels::ThreadPool* pool);

}  // namespace sparrow
