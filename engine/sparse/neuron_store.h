#pragma once
// NeuronStore: where the FFN rows of a converted model (engine/model/neuron_bundles.h) come from
// when they stay on flash (`--cache-mb`): PowerInfer-2's segmented neuron cache over the file.
//   - the hot segment: each layer's first records (a converted file puts the profile's hottest
//     neurons first), read at open and kept, looked up by index with no queue to maintain;
//   - the dynamic segment: a NeuronCache (two-queue LRU) filled on misses;
//   - flash: a BundleReader over the file opened O_DIRECT through the Env, so the page cache
//     does not hold the model behind the budget's back.
// The budget is one number, split between the two segments by `hot_share`; Resize() is the one
// entry point that moves it.
//
// Threads: the step in flight (one thread at a time) calls Start/Acquire/Release/ReadLayer;
// Resize() and stats() may be called from any thread. A shrink of the hot segment waits for the
// records of the step's current layer to be released (at most one layer's compute). Every read
// of the file is made by the store's one IoThread: a step's misses are posted to it and announced
// as they land (Start/Arrived), so compute works on what is in memory while they are in flight.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/env.h"
#include "engine/common/result.h"
#include "engine/memory/memory_user.h"
#include "engine/model/model.h"
#include "engine/sparse/bundle_reader.h"
#include "engine/sparse/hot_lru_rule.h"
#include "engine/sparse/io_thread.h"
#include "engine/sparse/neuron_cache.h"
#include "engine/sparse/record_arrivals.h"

namespace sparrow {

struct NeuronStoreOptions {
  size_t cache_bytes = 0;  // hot segment + dynamic cache
  // Share of cache_bytes given to the hot segment (each layer's first records).
  double hot_share = 0.5;
  // The LRU part earns its share (HotLruRule): thrashing, its bytes go to the hot segment; when
  // a ghost of it would find one lookup in five again, it gets them back.
  bool adaptive = true;
  bool direct = true;  // O_DIRECT (falls back to buffered reads + DONTNEED)
  // Reads in flight at once (io_uring; 0 or 1: one pread at a time). A step's misses are issued
  // together: flash serves many small reads at once far faster than one after another.
  int queue_depth = 128;
  size_t max_read_bytes = size_t{1} << 20;  // a run of adjacent records is read this much at most
  // Prefetch() reads guesses ahead (expert files: the next layer's router on this layer's
  // hidden state); false: Prefetch does nothing (to measure what the guesses hide).
  bool read_ahead = true;
  Env* env = nullptr;  // null: Env::Default()
};

struct NeuronStoreStats {
  NeuronCacheStats cache;   // the dynamic segment
  BundleReadStats reads;    // flash
  int64_t hot_hits = 0;     // records served by the hot segment
  int64_t hot_records = 0;  // records held in the hot segment now (all layers)
  size_t hot_bytes = 0;
  // What the store holds in memory: the hot segment, the bytes the cache's bundles fill and the
  // staging buffer (what every "resident" report shows and the memory budget counts).
  size_t held_bytes() const { return hot_bytes + cache.held_bytes + staging_bytes; }
  int64_t layer_reads = 0;  // whole layers read for batches that need most neurons (prefill)
  // Time the step waited for flash (reads not hidden behind compute), microseconds.
  uint64_t wait_micros = 0;
  size_t staging_bytes = 0;                 // the buffer those are read into (one layer)
  size_t capacity_bytes = 0;                // what Resize (or the options) asked for
  double hot_share = 0;                     // now (the adaptive rule may have raised it)
  bool direct = false;                      // reads bypass the page cache
  std::string_view read_backend = "pread";  // "io_uring" when reads are issued together
  // Read-ahead (Prefetch): records read on a guess, and of those, the ones the next Start of
  // their layer asked for (the guess was right).
  int64_t prefetch_reads = 0, prefetch_used = 0;
  // Every guess's records that were not in memory, read or only scored, and of those the ones
  // the next Start asked for; whether guesses are read now (the accuracy gate).
  int64_t guesses = 0, guesses_right = 0;
  bool read_ahead_on = false;
};

class NeuronStore final : public MemoryUser {
 public:
  // Opens `model`'s file (a converted one) a second time for flash reads and preloads the hot
  // segment. Errors name the file.
  static Result<std::unique_ptr<NeuronStore>> Open(const Model& model,
                                                   const NeuronStoreOptions& options);
  ~NeuronStore();
  NeuronStore(const NeuronStore&) = delete;
  NeuronStore& operator=(const NeuronStore&) = delete;

  const NeuronBundleLayout& layout() const { return layout_; }

  // Pins the records of `ids` (distinct neurons of `layer`, in record numbering) until Release:
  // records[k] points at neuron ids[k]'s record, from the hot segment, the cache, or flash (read
  // now; misses the cache has no slot for are read into the store's own buffer). Records whose
  // read failed are listed in `failed` (indices into ids; their pointers are not to be used) and
  // the first error is returned, naming the file and offset. One layer is pinned at a time.
  Status Acquire(int32_t layer, std::span<const int32_t> ids, const uint8_t** records,
                 std::vector<int32_t>* failed);
  void Release();

  // Acquire in steps, for compute that overlaps the reads (PowerInfer-2's neuron-cluster
  // pipeline): Start pins like Acquire and sets every records[k], but returns once the hits are
  // known; records[k] may be used at once for every k not in pending(), and the others as
  // Arrived() hands them out. Finish (before Release) waits for the last read.
  void Start(int32_t layer, std::span<const int32_t> ids, const uint8_t** records);
  // Indices into Start's ids whose records are being read.
  std::span<const int32_t> pending() const { return pending_; }
  // Waits until `want` more pending records (or all the rest) have arrived and returns those
  // read well since the last call (indices into ids). Empty once every one has arrived.
  std::span<const int32_t> Arrived(size_t want);
  // Waits for Start's reads to end: appends the indices whose read failed to `failed` and
  // returns the first error, naming the file and offset.
  Status Finish(std::vector<int32_t>* failed);

  // Reads the records `ids` of `layer` (a guess at a coming Start of that layer, made while this
  // step's records are pinned) into free cache slots, after this step's reads; records cached,
  // hot or without a slot are skipped. The next Start waits for them and scores the guess. A
  // wrong guess costs only the bandwidth and the slots it took (they are evicted first); while
  // fewer than half of the last window's guessed records were used, guesses are only scored,
  // not read. No-op without read_ahead.
  void Prefetch(int32_t layer, std::span<const int32_t> ids);
  // NeuronStoreOptions::read_ahead: false makes Prefetch a no-op.
  bool reads_ahead() const { return read_ahead_; }

  // Every record of `layer`, in sequential reads, into the store's staging buffer; *records
  // receives it (record k at k * record_bytes; valid until the next ReadLayer). For batches that
  // use most neurons, where reading all of a layer in large reads beats gathering.
  Status ReadLayer(int32_t layer, const uint8_t** records);
  // Whether batches should read layers whole (MemoryPlan::tight turns it off: the staging
  // buffer, one layer's records, is given back now and such batches gather through the cache).
  // The step thread, between steps.
  void set_layer_staging(bool allowed);
  bool layer_staging() const { return layer_staging_; }

  // The one entry point for the memory budget: from any thread. Shrinking evicts and gives the
  // memory back to the OS; growing lets the segments fill (the hot one a little per step).
  Status Resize(uint64_t cache_bytes) override;
  // What the last Resize (or the options) asked for.
  uint64_t capacity_bytes() const override { return capacity_bytes_; }

  // As a MemoryUser: the neuron cache (an expert file's cache of experts too), holding its
  // segments' filled records; a tight level turns layer staging off; ShrinkNow is Resize down.
  MemoryUserKind kind() const override { return MemoryUserKind::kNeuronCache; }
  uint64_t held_bytes() const override;
  void ApplyLevel(bool tight) override { set_layer_staging(!tight); }
  bool ShrinkNow(uint64_t bytes) override;

  NeuronStoreStats stats() const;

 private:
  NeuronStore(const NeuronBundleLayout& layout, std::unique_ptr<BundleReader> reader,
              const NeuronStoreOptions& options);
  // Records per layer of the hot segment for `cache_bytes`.
  int64_t HotRecordsFor(size_t cache_bytes) const;
  // Brings layer's hot segment toward the target: drops its tail, or reads up to `max_bytes` of
  // records past it (the hot segment grows a little per step).
  Status AdjustHot(int32_t layer, size_t max_bytes);
  uint8_t* HotRecord(int32_t layer, int64_t k) const;
  // Gives back the hot segment's pages of records [keep, end) of `layer` (MADV_DONTNEED).
  void DropHotPages(int32_t layer, int64_t keep, int64_t end);
  // Reads records [first, last) of `layer` to base + k * record bytes (on the I/O thread, waiting
  // for it); lowers *first_failed to the first record whose read failed.
  Status ReadRecords(int32_t layer, int64_t first, int64_t last, uint8_t* base,
                     int64_t* first_failed);
  // Waits for the last Prefetch's reads and releases its slots into the cache.
  void SettlePrefetch();
  // Counts how many records of the last guess for `layer` the Start of `ids` uses, and turns
  // reads on guesses on or off by the window's accuracy.
  void ScoreGuess(int32_t layer, std::span<const int32_t> ids);
  // Marks the hot segment in use by the step (a shrink waits for Unpin).
  void Pin();
  void Unpin();

  const NeuronBundleLayout& layout_;
  const int64_t n_layer_, n_ff_;
  const size_t record_bytes_;  // the largest layer's (cache slots fit every layer)
  std::atomic<double> hot_share_;
  // The hot/LRU split's judge (NeuronStoreOptions::adaptive); empty when the share is fixed.
  std::optional<HotLruRule> rule_;
  std::vector<int32_t> ghost_ids_;
  // Each layer's hot records for `cache_bytes` at `share`.
  int64_t HotRecordsAt(size_t cache_bytes, double share) const;
  // Feeds the rule a call's cold neurons at the configured share while the LRU is given away.
  void CountGhost(int32_t layer, std::span<const int32_t> ids);
  // Feeds the rule the call just released; applies a new share.
  void Adapt(int64_t hits);
  std::unique_ptr<BundleReader> reader_;
  std::unique_ptr<NeuronCache> cache_;

  // Hot segment: per layer, address space for every record (untouched pages cost nothing);
  // hot_[il] records are present. hot_ is the step thread's; a shrink takes hot_mu_.
  std::vector<uint8_t*> hot_base_;
  std::vector<int64_t> hot_;
  std::atomic<int64_t> hot_target_{0};
  std::atomic<int64_t> hot_total_{0}, hot_hits_{0}, layer_reads_{0};
  std::atomic<uint64_t> wait_micros_{0};
  // Adds the time since `since` (Env clock) to wait_micros_.
  void Waited(uint64_t since);
  Env* env_;
  std::atomic<size_t> capacity_bytes_{0};
  mutable std::mutex hot_mu_;
  std::condition_variable hot_cv_;
  bool pinned_ = false;  // under hot_mu_: a layer's records are out (Acquire .. Release)

  uint8_t* staging_ = nullptr;
  bool layer_staging_ = true;
  size_t staging_bytes_ = 0;
  std::atomic<size_t> staging_mapped_{0};

  // The pinned layer's state, for Release.
  int32_t layer_ = -1;
  std::vector<int32_t> cache_ids_, cache_index_, misses_, cache_failed_;
  std::vector<int32_t> read_ids_, read_from_, read_failed_;  // reads of the Start
  std::vector<int32_t> pending_;                             // read_ids_ as indices into ids
  std::vector<uint8_t*> slots_, read_dst_;
  std::vector<uint8_t> bypass_;
  // The Start's reads: announced through arrivals_ by the I/O thread, which writes read_failed_
  // and read_status_ before it closes the round.
  RecordArrivals arrivals_;
  Status read_status_;
  bool reading_ = false;             // a Start's reads are not finished yet
  std::vector<int32_t> io_indices_;  // the I/O thread's: read indices mapped to ids indices

  // The Prefetch in flight (pf_active_): its ids, slots and reads; pf_done_ under pf_mu_.
  const bool read_ahead_;
  bool pf_active_ = false;
  int32_t pf_layer_ = -1;
  std::vector<int32_t> pf_ids_, pf_misses_, pf_read_ids_, pf_failed_, pf_failed_ids_;
  std::vector<uint8_t*> pf_slots_, pf_dst_;
  Status pf_status_;
  std::mutex pf_mu_;
  std::condition_variable pf_cv_;
  bool pf_done_ = false;
  // The last guess's records that were not in memory (read, or only scored while reads are
  // paused) and those of them read, sorted, for the next Start of their layer.
  int32_t guessed_layer_ = -1;
  std::vector<int32_t> guessed_, prefetched_;   // prefetched_: the ones read well
  static constexpr int64_t kGuessWindow = 256;  // guessed records per accuracy window
  static constexpr double kReadAheadMinAccuracy = 0.5;
  int64_t window_guesses_ = 0, window_right_ = 0;
  std::atomic<bool> read_ahead_on_{true};
  std::atomic<int64_t> prefetch_reads_{0}, prefetch_used_{0}, guesses_{0}, guesses_right_{0};

  std::unique_ptr<IoThread> io_;  // stopped first, in the destructor
};

}  // namespace sparrow
