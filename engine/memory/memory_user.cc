#include "engine/memory/memory_user.h"

namespace sparrow {

std::string_view MemoryUserName(MemoryUserKind kind) {
  switch (kind) {
    case MemoryUserKind::kKvPool:
      return "kv_pool";
    case MemoryUserKind::kScratch:
      return "scratch";
    case MemoryUserKind::kNeuronCache:
      return "neuron_cache";
  }
  return "unknown";
}

}  // namespace sparrow
