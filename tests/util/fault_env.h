#pragma once
// Injected I/O faults for the Env seam (engine/common/env.h): files whose reads fail where they
// touch a chosen byte range, opened through an Env the tests hand to the engine in place of the
// real one. The range can be moved or cleared while the engine runs (thread-safe).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/common/env.h"

namespace sparrow::testing {

// Shared by a FaultyEnv and the files it opened: reads touching [begin, end) fail with EIO;
// while held, batches of reads wait (a slow device, made deterministic: the test decides when
// the reads complete).
struct FaultRange {
  std::atomic<uint64_t> begin{0}, end{0};  // empty: no fault
  std::atomic<int64_t> injected{0};        // reads failed so far
  std::atomic<bool> refuse_maps{false};    // MapReadOnly fails (ENOMEM) while set
  std::atomic<int64_t> maps{0};            // MapReadOnly calls so far

  void Hold() {
    std::lock_guard<std::mutex> lock(mu);
    held = true;
  }
  void Unhold() {
    {
      std::lock_guard<std::mutex> lock(mu);
      held = false;
    }
    cv.notify_all();
  }
  // Batches that have reached the hold and wait there.
  int waiting() {
    std::lock_guard<std::mutex> lock(mu);
    return n_waiting;
  }
  void WaitWhileHeld() {
    std::unique_lock<std::mutex> lock(mu);
    ++n_waiting;
    cv.wait(lock, [&] { return !held; });
    --n_waiting;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool held = false;
  int n_waiting = 0;

  void Set(uint64_t b, uint64_t e) {
    end = 0;
    begin = b;
    end = e;
  }
  void Clear() { end = 0; }
};

class FaultyFile : public RandomAccessFile {
 public:
  FaultyFile(std::unique_ptr<RandomAccessFile> base, std::shared_ptr<FaultRange> range)
      : base_(std::move(base)), range_(std::move(range)) {}
  Status ReadAt(uint64_t offset, size_t n, void* dst) const override {
    range_->WaitWhileHeld();
    if (Faulty(offset, n)) return Injected(offset);
    return base_->ReadAt(offset, n, dst);
  }
  // The faulty requests fail here; the others go to the real file's batch (io_uring or pread).
  using RandomAccessFile::ReadBatch;
  Status ReadBatch(std::span<ReadRequest> reqs, const ReadDoneFn& on_done) const override {
    range_->WaitWhileHeld();
    std::vector<ReadRequest> healthy;
    std::vector<size_t> where;
    Status first = Status::Ok();
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (Faulty(reqs[i].offset, reqs[i].n)) {
        reqs[i].status = Injected(reqs[i].offset);
        if (first.ok()) first = reqs[i].status;
        if (on_done) on_done(i);
      } else {
        healthy.push_back(reqs[i]);
        where.push_back(i);
      }
    }
    Status st = base_->ReadBatch(healthy, [&](size_t k) {
      reqs[where[k]] = healthy[k];
      if (on_done) on_done(where[k]);
    });
    return first.ok() ? st : first;
  }
  std::string_view read_backend() const override { return base_->read_backend(); }
  uint64_t size() const override { return base_->size(); }
  bool direct() const override { return base_->direct(); }
  size_t alignment() const override { return base_->alignment(); }
  const std::string& path() const override { return base_->path(); }

 private:
  bool Faulty(uint64_t offset, size_t n) const {
    return offset < range_->end && offset + n > range_->begin;
  }
  Status Injected(uint64_t offset) const {
    ++range_->injected;
    return IoError(path() + ": injected EIO at offset " + std::to_string(offset));
  }

  std::unique_ptr<RandomAccessFile> base_;
  std::shared_ptr<FaultRange> range_;
};

class FaultyEnv : public Env {
 public:
  FaultyEnv() : range_(std::make_shared<FaultRange>()) {}
  FaultRange& faults() { return *range_; }

  using Env::OpenRandomAccess;
  Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path,
                                                             const FileOptions& options) override {
    auto f = Env::Default()->OpenRandomAccess(path, options);
    if (!f.ok()) return f.status();
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<FaultyFile>(std::move(f).value(), range_));
  }
  Result<std::unique_ptr<MappedFile>> MapReadOnly(const std::string& path) override {
    ++range_->maps;
    if (range_->refuse_maps) return IoError(path + ": cannot map: injected ENOMEM");
    return Env::Default()->MapReadOnly(path);
  }
  Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) override {
    return Env::Default()->ReadSmallFile(path, max_bytes);
  }
  uint64_t NowMicros() const override { return Env::Default()->NowMicros(); }

 private:
  std::shared_ptr<FaultRange> range_;
};

}  // namespace sparrow::testing
