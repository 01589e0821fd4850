#pragma once
// Env: the engine's access to files and the clock (LevelDB's idea), so that tests can inject
// failed, short and slow reads where the real thing would need a broken disk. Env::Default()
// is the POSIX one; thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow {

// One read of a batch (RandomAccessFile::ReadBatch): filled in with its outcome and latency.
struct ReadRequest {
  uint64_t offset = 0;
  size_t n = 0;
  void* dst = nullptr;
  Status status;
  uint64_t micros = 0;  // from its submission to its completion
};

struct FileOptions {
  // Ask for O_DIRECT, so that what is read does not stay in the page cache behind the memory
  // budget's back. Where the file system refuses it the file is read through the page cache,
  // each range dropped after its read (POSIX_FADV_DONTNEED), and direct() says false.
  bool direct = true;
  // Reads ReadBatch keeps in flight through io_uring; 0 or 1: one pread at a time (also where
  // io_uring is missing or refused: read_backend() says which).
  int queue_depth = 0;
};

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

  // Called on the reading thread as each request completes (its status and micros set), so that
  // a consumer can use what has arrived while the rest is still in flight.
  using ReadDoneFn = std::function<void(size_t index)>;
  // Issues every request, up to the queue depth at once, each getting its own status (as ReadAt
  // would give it) and latency; returns the first error. Requests must not overlap in dst.
  // `on_done` (may be empty) hears of each request as it completes, in completion order.
  // This default reads them one by one.
  virtual Status ReadBatch(std::span<ReadRequest> requests, const ReadDoneFn& on_done) const;
  Status ReadBatch(std::span<ReadRequest> requests) const { return ReadBatch(requests, {}); }
  // "io_uring" when ReadBatch keeps several reads in flight, "pread" otherwise.
  virtual std::string_view read_backend() const { return "pread"; }
};

// A whole file mapped read-only: a model's weights are used in place from it, and its pages
// are the kernel's to drop and re-read (a budget-friendly mapping: nothing of it is anonymous).
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  // Null when the file is empty.
  virtual const uint8_t* data() const = 0;
  virtual uint64_t size() const = 0;
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  // Maps `path` whole. A missing file is NotFound, anything but a regular file InvalidArgument,
  // other failures IoError; each names the path.
  virtual Result<std::unique_ptr<MappedFile>> MapReadOnly(const std::string& path) = 0;

  virtual Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(
      const std::string& path, const FileOptions& options) = 0;
  Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path, bool direct) {
    return OpenRandomAccess(path, FileOptions{direct, 0});
  }
  // The whole of a small file read at once (a /proc or cgroup file, a profile, a template): /proc
  // files say size 0, so it reads to the end. A missing file is NotFound, one longer than
  // `max_bytes` InvalidArgument, other failures IoError; each names the path.
  virtual Result<std::string> ReadSmallFile(const std::string& path,
                                            size_t max_bytes = kSmallFileMaxBytes) = 0;
  virtual uint64_t NowMicros() const = 0;

  static constexpr size_t kSmallFileMaxBytes = size_t{16} << 20;
};

// What `path` holds, or "" when it cannot be read (a kernel file that this machine lacks): for
// readers that treat a missing file as a missing figure.
std::string ReadSmallFileOrEmpty(const std::string& path,
                                 size_t max_bytes = Env::kSmallFileMaxBytes);

}  // namespace sparrow
