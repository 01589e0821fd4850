#pragma once
// What the neuron and the expert conversions (bundle_convert.h, expert_convert.h) write alike:
// the source's metadata under the new layout keys, the record orders' check, the miss curve.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_header.h"
#include "engine/sparse/miss_curve.h"

namespace sparrow::tools {

// Copies `src`'s metadata into `h` but its alignment and any earlier layout's keys, then sets
// the alignment to `io_block` and the layout's name, version and I/O block. Errors name `path`.
Status WriteBundleHeader(const GgufFile& src, const std::string& path, std::string_view layout,
                         uint32_t io_block, GgufHeader& h);

// The miss curve (when not empty) under its two keys.
void AddMissCurve(const std::vector<MissCurvePoint>& curve, GgufHeader& h);

// Each layer's order must be a permutation of 0..n-1; the error names the layer and `what` (the
// records' kind: "neuron", "expert").
Status CheckRecordOrders(const std::vector<std::vector<int32_t>>& orders, int64_t n,
                         std::string_view what);

}  // namespace sparrow::tools
