#pragma once
// Env: the engine's access to files and the clock (LevelDB's idea), so that tests can inject
// failed, short and slow reads where the real thing would need a broken disk. Env::Default()
// is the POSIX one; thread-safe.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/common/result.h"

namespace sparrow {

// Positional reads of one open file. Thread-safe (no shared file offset).
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly `n` bytes at `offset` into `dst`. Reading past the end or an I/O error is an
  // IoError naming the file and the offset. With direct(), `offset`, `n` and `dst` must be
  // multiples of alignment().
  virtual Status ReadAt(uint64_t offset, size_t n, void* dst) const = 0;
  virtual uint64_t size() const = 0;
  // True when reads bypass the page cache (O_DIRECT).
  virtual bool direct() const = 0;
  virtual size_t alignment() const = 0;
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  // `direct`: ask for O_DIRECT, so that what is read does not stay in the page cache behind the
  // memory budget's back. Where the file system refuses it the file is read through the page
  // cache, each range dropped after its read (POSIX_FADV_DONTNEED), and direct() says false.
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path,
                                                                     bool direct) = 0;
  virtual uint64_t NowMicros() const = 0;
};

}  // namespace sparrow
