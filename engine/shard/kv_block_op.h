#pragma once
// KvBlockOp: one change the coordinator's KV pool made to its blocks other than the forward
// pass's writes (KvBlockObserver), as a shard worker must repeat it on the blocks of its layers.
#include <cstdint>

namespace sparrow {

struct KvBlockOp {
  enum class Kind : uint8_t { kCopy, kResize };
  Kind kind = Kind::kCopy;
  int32_t src = 0, dst = 0;  // kCopy
  int64_t n_blocks = 0;      // kResize
};

}  // namespace sparrow
