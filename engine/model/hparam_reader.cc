#include "engine/model/hparam_reader.h"

#include <cmath>

#include "engine/model/gguf_file.h"

namespace sparrow {

Result<int64_t> ReadCount(const GgufFile& f, const std::string& key, int64_t max) {
  const GgufValue* v = f.Find(key);
  if (v && v->type == GgufValueType::kArray) {
    return Unsupported("metadata key '" + key +
                       "' is a per-layer array; only a single value is supported");
  }
  SPARROW_ASSIGN_OR_RETURN(uint64_t x, f.GetUInt(key));
  if (x == 0 || x > static_cast<uint64_t>(max)) {
    return Corrupt("metadata key '" + key + "' is " + std::to_string(x) + ", expected 1.." +
                   std::to_string(max));
  }
  return static_cast<int64_t>(x);
}

Result<int64_t> ReadCountOr(const GgufFile& f, const std::string& key, int64_t fallback,
                            int64_t max) {
  if (!f.Find(key)) return fallback;
  return ReadCount(f, key, max);
}

Result<float> ReadFloatOr(const GgufFile& f, const std::string& key, double fallback, double lo,
                          double hi) {
  SPARROW_ASSIGN_OR_RETURN(double x, f.GetFloatOr(key, fallback));
  if (!(std::isfinite(x) && x > lo && x <= hi)) {
    return Corrupt("metadata key '" + key + "' is " + std::to_string(x) +
                   ", expected a value in (" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "]");
  }
  return static_cast<float>(x);
}

}  // namespace sparrow
