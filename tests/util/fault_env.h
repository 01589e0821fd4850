#pragma once
// Injected I/O faults for the Env seam (engine/common/env.h): files whose reads fail where they
// touch a chosen byte range, opened through an Env the tests hand to the engine in place of the
// real one. The range can be moved or cleared while the engine runs (thread-safe).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/common/env.h"

namespace sparrow::testing {

// Shared by a FaultyEnv and the files it opened: reads touching [begin, end) fail with EIO.
struct FaultRange {
  std::atomic<uint64_t> begin{0}, end{0};  // empty: no fault
  std::atomic<int64_t> injected{0};        // reads failed so far

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
    if (offset < range_->end && offset + n > range_->begin) {
      ++range_->injected;
      return IoError(path() + ": injected EIO at offset " + std::to_string(offset));
    }
    return base_->ReadAt(offset, n, dst);
  }
  uint64_t size() const override { return base_->size(); }
  bool direct() const override { return base_->direct(); }
  size_t alignment() const override { return base_->alignment(); }
  const std::string& path() const override { return base_->path(); }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  std::shared_ptr<FaultRange> range_;
};

class FaultyEnv : public Env {
 public:
  FaultyEnv() : range_(std::make_shared<FaultRange>()) {}
  FaultRange& faults() { return *range_; }

  Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path,
                                                             bool direct) override {
    auto f = Env::Default()->OpenRandomAccess(path, direct);
    if (!f.ok()) return f.status();
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<FaultyFile>(std::move(f).value(), range_));
  }
  uint64_t NowMicros() const override { return Env::Default()->NowMicros(); }

 private:
  std::shared_ptr<FaultRange> range_;
};

}  // namespace sparrow::testing
