#include "engine/model/pooling_type.h"

#include <string>

#include "engine/model/gguf_file.h"

namespace sparrow {

const char* PoolingName(PoolingType p) {
  switch (p) {
    case PoolingType::kNone:
      return "none";
    case PoolingType::kMean:
      return "mean";
    case PoolingType::kCls:
      return "cls";
    case PoolingType::kLast:
      return "last";
    case PoolingType::kRank:
      return "rank";
  }
  return "none";
}

std::optional<PoolingType> PoolingFromName(std::string_view name) {
  for (PoolingType p : {PoolingType::kNone, PoolingType::kMean, PoolingType::kCls,
                        PoolingType::kLast, PoolingType::kRank}) {
    if (name == PoolingName(p)) return p;
  }
  return std::nullopt;
}

std::optional<PoolingType> PoolingFromGguf(uint64_t value) {
  switch (value) {
    case 0:
      return PoolingType::kNone;
    case 1:
      return PoolingType::kMean;
    case 2:
      return PoolingType::kCls;
    case 3:
      return PoolingType::kLast;
    case 4:
      return PoolingType::kRank;
    default:
      return std::nullopt;
  }
}

std::optional<PoolingType> FilePooling(const GgufFile& file) {
  auto arch = file.GetString("general.architecture");
  if (!arch.ok()) return std::nullopt;
  auto value = file.GetUInt(std::string(*arch) + ".pooling_type");
  return value.ok() ? PoolingFromGguf(*value) : std::nullopt;
}

}  // namespace sparrow
