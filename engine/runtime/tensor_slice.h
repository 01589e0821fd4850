#pragma once
// TensorSlice: Galaxy's tensor split of a layer over several devices. Each device computes a
// contiguous range of the layer's KV heads (with the query heads that read them and the
// attention output's columns for those heads) and a contiguous range of the FFN's neurons (their
// gate and up rows, their columns of down); the devices' outputs are partial sums of the layer's
// attention and FFN outputs, added on the coordinator. A device holds only its slice's weights.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/model.h"

namespace sparrow {

struct TensorSlice {
  int64_t kv_head_begin = 0, kv_head_end = 0;  // KV heads [begin, end)
  int64_t ff_begin = 0, ff_end = 0;            // FFN neurons [begin, end)

  int64_t kv_heads() const { return kv_head_end - kv_head_begin; }
  int64_t neurons() const { return ff_end - ff_begin; }
  std::string ToString() const;  // "kv heads 0..3, neurons 0..2815"
  bool operator==(const TensorSlice&) const = default;
};

// One layer's weights cut to a slice. The rows of Q, K, V, gate and up are views into the
// model; the columns of O and down are copied (a column of a row-major matrix is spread over
// every page of it), so that the device's memory holds its part only.
struct SlicedLayer {
  kernels::WeightMatrix wq, wk, wv, wo, gate, up, down;
  std::vector<float> bq, bk, bv;
  std::vector<uint8_t> wo_bytes, down_bytes;  // wo's and down's data
};

// The smallest steps a slice's bounds move by: a slice's O and down columns must start on a
// block of their types (and of the activations' type for the dot products).
struct SliceGrain {
  int64_t kv_heads = 1;
  int64_t neurons = 1;
};

// Unsupported naming the reason when the model's layers cannot be split (experts, PowerInfer's
// transposed down, one norm over all heads); else the grain over layers [first, end).
Result<SliceGrain> TensorSplitGrain(const Model& model, int64_t first, int64_t end);

// Checks `s` against the model (in range, on the grain); InvalidArgument naming the bound.
Status CheckSlice(const Model& model, int64_t first, int64_t end, const TensorSlice& s);

// Layers [first, end) cut to `s` (checked first).
Result<std::vector<SlicedLayer>> SliceLayers(const Model& model, int64_t first, int64_t end,
                                             const TensorSlice& s);

// The heads and neurons cut into consecutive slices in proportion to `shares` (one per device,
// positive: its speed), on the grain; a device whose share rounds to nothing gets an empty
// slice. Unsupported as TensorSplitGrain says.
Result<std::vector<TensorSlice>> CutSlices(const Model& model, int64_t first, int64_t end,
                                           std::span<const double> shares);

}  // namespace sparrow
