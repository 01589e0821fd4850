#pragma once
// PromptCacheStore: the prompt cache that outlives the process (--prompt-cache-dir). Full KV
// blocks the prefix cache publishes are written, one file each (prompt_cache_file.h), under
// DIR/<model digest>-<k type>-<v type>-b<block size>/<chain hash>.kvb, so a restarted sparrowd
// reads a prompt it saw before instead of computing it. The files of every model under DIR
// share one size limit, the least recently used going first (a hit refreshes the file's mtime,
// so the order survives restarts). Writes go through a bounded queue to one writer thread (the
// scheduler never waits for flash; a full queue drops the block); reads are the scheduler's,
// through Env (io_uring where the neuron store has it, else pread), checked before use: a file
// that is damaged, short, or of another model, type or format is refused with a log line and
// deleted, and the block recomputed. Thread-safe.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/common/env.h"
#include "engine/common/result.h"
#include "engine/kv/kv_block_tier.h"
#include "engine/kv/prompt_cache_file.h"

namespace sparrow {

struct PromptCacheOptions {
  std::string dir;
  int64_t max_bytes = int64_t{1} << 30;  // every model's files under dir together
  KvBlockFileIdentity identity;
  // Blocks queued for the writer beyond this many bytes are dropped (the memory the queue may
  // hold: a 2,000-token prompt of a 1B model in f16 is 64 MiB).
  int64_t max_pending_bytes = int64_t{64} << 20;
  int io_depth = 4;  // reads of one block in flight (io_uring)
  Env* env = Env::Default();
};

struct PromptCacheStats {
  int64_t files = 0;  // under dir, every model's
  int64_t bytes = 0;
  int64_t hits = 0;     // blocks read back
  int64_t writes = 0;   // blocks written
  int64_t refused = 0;  // files refused (damaged, another model, ...) and deleted
  int64_t dropped = 0;  // blocks not written: the queue was full, or the write failed
  int64_t evicted = 0;  // files deleted to stay under max_bytes
  int64_t pending = 0;  // blocks waiting for the writer
};

class PromptCacheStore final : public KvBlockTier {
 public:
  // Creates the directories, indexes the files found (contents are checked when read) and
  // deletes what a crash left half-written. An unusable dir is an IoError naming it.
  static Result<std::unique_ptr<PromptCacheStore>> Open(PromptCacheOptions options);
  ~PromptCacheStore() override;  // writes what is queued, then stops the writer

  int64_t block_bytes() const override { return opts_.identity.block_bytes; }
  bool Contains(uint64_t hash) const override;
  void Save(uint64_t hash, const uint8_t* bytes) override;
  bool Load(uint64_t hash, uint8_t* bytes) override;

  // Waits until every queued block is written (tests; shutdown).
  void Flush();
  PromptCacheStats stats() const;
  const std::string& model_dir() const { return model_dir_; }
  std::string PathOf(uint64_t hash) const;

 private:
  explicit PromptCacheStore(PromptCacheOptions options);
  struct File {
    std::string path;
    int64_t bytes;
  };
  struct Pending {
    uint64_t hash;
    std::vector<uint8_t> bytes;
  };
  Status Index();
  void WriterLoop();
  Status WriteFile(const Pending& p);
  // Reads and checks the file of `hash` into `bytes`.
  Status ReadChecked(const std::string& path, uint64_t hash, uint8_t* bytes);
  // Takes `path` out of the index; the caller holds mu_.
  void Forget(const std::string& path);
  void Touch(const std::string& path);  // most recently used; caller holds mu_
  void EvictOverLimit();                // caller holds mu_

  const PromptCacheOptions opts_;
  const std::string model_dir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<File> lru_;  // least recently used first
  std::unordered_map<std::string, std::list<File>::iterator> by_path_;
  std::deque<Pending> queue_;
  std::unordered_set<uint64_t> queued_;  // hashes in queue_ or being written
  int64_t pending_bytes_ = 0;
  int64_t bytes_ = 0;
  PromptCacheStats counts_;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace sparrow
