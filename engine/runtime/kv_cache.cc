#include "engine/runtime/kv_cache.h"

#include <string>

#include "engine/common/check.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/kv_quantize.h"

namespace sparrow {

size_t KvRowBytes(TensorType type, int64_t n) {
  return kernels::RowBytes(type, n);
}

int64_t KvBytesPerLayerPosition(const KvTypes& types, int64_t kv_dim) {
  return static_cast<int64_t>(KvRowBytes(types.k, kv_dim) + KvRowBytes(types.v, kv_dim));
}

Status CheckKvTypes(const KvTypes& types, int64_t head_dim) {
  for (const auto& [type, what] : {std::pair{types.k, "keys"}, std::pair{types.v, "values"}}) {
    const std::string_view name = TensorTypeName(type);
    if (!KvCacheTypeFromName(name)) {
      return InvalidArgument("the KV cache cannot store " + std::string(what) + " as " +
                             std::string(name) + " (types: " + std::string(KvCacheTypeNames()) +
                             ")");
    }
    const auto traits = GetTensorTypeTraits(type);
    if (head_dim % traits->block_elems != 0) {
      return InvalidArgument("KV cache type " + std::string(name) + " for the " + what +
                             " needs a head size that is a multiple of " +
                             std::to_string(traits->block_elems) + "; this model's is " +
                             std::to_string(head_dim));
    }
  }
  return Status::Ok();
}

void StoreKvRow(TensorType type, const float* x, uint8_t* dst, int64_t n) {
  kernels::QuantizeKvRow(type, x, dst, n);
}

ContiguousKvCache::ContiguousKvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim, KvTypes types)
    : n_ctx_(n_ctx),
      types_(types),
      k_row_(KvRowBytes(types.k, kv_dim)),
      v_row_(KvRowBytes(types.v, kv_dim)),
      k_(static_cast<size_t>(n_layer * n_ctx) * k_row_),
      v_(static_cast<size_t>(n_layer * n_ctx) * v_row_) {
  SPARROW_CHECK(KvCacheTypeFromName(TensorTypeName(types.k)) &&
                KvCacheTypeFromName(TensorTypeName(types.v)));
}

}  // namespace sparrow
