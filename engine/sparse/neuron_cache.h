#pragma once
// NeuronCache: the DRAM cache of neuron bundles (the records of engine/model/neuron_bundles.h)
// read from flash, PowerInfer-2's dynamic segment: a two-queue LRU at bundle granularity. A new
// bundle enters the inactive queue; a hit on it promotes it to the head of the active queue; when
// the active queue holds over 90% of the capacity its tail moves to the inactive head; eviction
// takes the inactive tail (then the active tail), skipping pinned bundles, and only drops (a
// bundle is never written back). Slots live in a SlotArena: no allocation per token, and a
// shrink gives whole chunks back to the OS.
//
// Threads: one user at a time acquires and releases (the step in flight: the scheduler's thread
// or the compute it drives); Resize() and stats() may be called from any thread. Bundles pinned
// by the step in flight stay put: a shrink that would move or drop them completes when they are
// released, so a resize never waits for a step.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "engine/common/status.h"
#include "engine/memory/slot_arena.h"

namespace sparrow {

struct NeuronCacheStats {
  int64_t hits = 0, misses = 0;  // cumulative, by Acquire
  int64_t evictions = 0;         // bundles dropped to make room or by a shrink
  int64_t bypassed = 0;          // misses that found no slot (all pinned or no capacity)
  int64_t used = 0;              // bundles held
  int64_t active = 0, inactive = 0, pinned = 0;
  int64_t capacity = 0;       // bundles it may hold
  size_t capacity_bytes = 0;  // what Resize asked for
  size_t mapped_bytes = 0;    // address space taken from the OS (whole chunks)
  // The bytes the bundles held fill (at most mapped_bytes): what "resident" means in every report
  // and what the memory budget counts. A chunk's untouched slots cost nothing; transparent huge
  // pages may back a little more.
  size_t held_bytes = 0;
  bool shrink_pending = false;  // pinned bundles keep a shrink from completing
};

class NeuronCache {
 public:
  // Bundles of `record_bytes` for `n_layer` layers of `n_ff` neurons, `capacity_bytes` of them.
  NeuronCache(int64_t n_layer, int64_t n_ff, size_t record_bytes, size_t capacity_bytes,
              size_t chunk_bytes = size_t{4} << 20);

  size_t record_bytes() const { return arena_.slot_bytes(); }

  // Pins the bundles of `ids` (distinct neurons of `layer`). records[k] receives: the cached
  // bundle (a hit: promoted), or an empty slot the caller fills (a miss: k is appended to
  // `misses`), or null when no slot could be had (every slot pinned, or no capacity): the
  // caller then reads that bundle into its own buffer. Records stay valid until Release.
  void Acquire(int32_t layer, std::span<const int32_t> ids, uint8_t** records,
               std::vector<int32_t>* misses);
  // Read-ahead: takes and pins an empty slot for each bundle of `ids` not cached (records[k], k
  // appended to `misses`; the caller fills it) without counting a lookup; records[k] is null for
  // the others. Release with the same ids and records once filled; a filled slot then waits in
  // the inactive queue as any new bundle does, so a wrong guess is evicted first.
  void Reserve(int32_t layer, std::span<const int32_t> ids, uint8_t** records,
               std::vector<int32_t>* misses);
  // Unpins what Acquire (or Reserve) gave for the same ids and records. A miss whose slot could not
  // be filled (a failed read) is passed in `failed` (indices into ids) and dropped.
  void Release(int32_t layer, std::span<const int32_t> ids, std::span<uint8_t* const> records,
               std::span<const int32_t> failed = {});

  // The one entry point for the memory budget: from any thread. Shrinking evicts from the queue
  // tails, moves the kept bundles into the slots below the new capacity and unmaps the chunks
  // past it; growing lets the cache fill. Fails only when the OS refuses memory to grow.
  Status Resize(size_t capacity_bytes);

  NeuronCacheStats stats() const;
  // True when the bundle is cached (no promotion): for tests and the profile's miss curve.
  bool Contains(int32_t layer, int32_t neuron) const;

 private:
  enum Queue : int32_t { kNone, kInactive, kActive };
  struct Slot {
    int32_t key = -1;  // layer * n_ff + neuron, -1 when free
    int32_t pins = 0;
    int32_t prev = -1, next = -1;
    Queue queue = kNone;
  };
  struct List {
    int32_t head = -1, tail = -1;
    int64_t size = 0;
  };

  void Unlink(int32_t s);
  void PushHead(Queue q, int32_t s);
  // Moves the active tail to the inactive head while the active queue holds over 90%.
  void Balance();
  // Drops the least valuable unpinned bundle; false when every bundle is pinned.
  bool EvictOne();
  void Drop(int32_t s);
  // A free slot below the capacity, evicting if needed; -1 when none can be had.
  int32_t TakeSlot();
  // A slot for a new bundle `key`, pinned, at the inactive head (the caller fills it); -1 when
  // none can be had.
  int32_t Admit(int64_t key);
  // Moves live bundles to slots below capacity_ and releases the chunks past them; sets
  // shrink_pending_ when pinned bundles are in the way.
  void Compact();

  const int64_t n_layer_, n_ff_;
  mutable std::mutex mu_;
  SlotArena arena_;
  std::vector<int32_t> slot_of_;  // by key; -1 when not cached
  std::vector<Slot> slots_;       // by slot index, arena capacity
  std::vector<int32_t> free_;     // free slot indices below capacity_
  List lists_[3];                 // by Queue; lists_[kNone] stays empty
  List& active_ = lists_[kActive];
  List& inactive_ = lists_[kInactive];
  int64_t capacity_ = 0;  // slots usable
  size_t capacity_bytes_ = 0;
  int64_t used_ = 0, pinned_ = 0;
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0, bypassed_ = 0;
  bool shrink_pending_ = false;
};

}  // namespace sparrow
