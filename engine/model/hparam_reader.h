#pragma once
// Reading hyper-parameters from GGUF metadata with range checks; errors name the key at fault.
// Shared by ReadModelConfig and the families' own hyper-parameter hooks.
#include <cstdint>
#include <string>

#include "engine/common/result.h"

namespace sparrow {

class GgufFile;

// A count in 1..max (not a per-layer array).
Result<int64_t> ReadCount(const GgufFile& f, const std::string& key, int64_t max);
// The same, or `fallback` when the key is absent.
Result<int64_t> ReadCountOr(const GgufFile& f, const std::string& key, int64_t fallback,
                            int64_t max);
// A finite value > lo and <= hi, or `fallback` when the key is absent.
Result<float> ReadFloatOr(const GgufFile& f, const std::string& key, double fallback, double lo,
                          double hi);

}  // namespace sparrow
