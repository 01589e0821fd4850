#pragma once
// KvBlockTier: a second home for the prefix cache's full blocks, outside memory (the prompt cache
// on flash: prompt_cache_store.h), so that a prefix evicted from the pool, or lost with the
// process, is read back instead of recomputed. KvBlockPool calls it on the scheduler thread; an
// implementation states its own thread-safety.
#include <cstdint>

namespace sparrow {

class KvBlockTier {
 public:
  virtual ~KvBlockTier() = default;
  // Bytes of one block (the pool's slot): the pool refuses a tier of another size.
  virtual int64_t block_bytes() const = 0;
  // Whether a block is kept under `hash` (a cheap look at an index: no I/O).
  virtual bool Contains(uint64_t hash) const = 0;
  // Keeps a copy of the published full block `bytes` (block_bytes()) under its chain hash
  // (ChainBlockHash). Copies before it returns and never waits for I/O: it may drop the block
  // instead (a queue that is full), which costs a recompute later, never a wrong answer.
  virtual void Save(uint64_t hash, const uint8_t* bytes) = 0;
  // Fills `bytes` with the block kept under `hash`; false when there is none, or none that can
  // be trusted (checked: the caller then recomputes it).
  virtual bool Load(uint64_t hash, uint8_t* bytes) = 0;
};

}  // namespace sparrow
