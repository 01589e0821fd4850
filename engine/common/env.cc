#include "engine/common/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace sparrow {
namespace {

// The block O_DIRECT transfers must be aligned to: the logical block of today's devices is 512
// or 4096 bytes; 4096 serves both.
constexpr size_t kDirectAlignment = 4096;

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size, bool direct)
      : path_(std::move(path)), fd_(fd), size_(size), direct_(direct) {}
  ~PosixRandomAccessFile() override { close(fd_); }

  Status ReadAt(uint64_t offset, size_t n, void* dst) const override {
    auto* p = static_cast<uint8_t*>(dst);
    const uint64_t start = offset;
    while (n > 0) {
      const ssize_t got = pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        return IoError(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                       std::to_string(offset) + " failed: " + std::strerror(errno));
      }
      if (got == 0) {
        return IoError(path_ + ": read at offset " + std::to_string(offset) +
                       " ends past the end of the file (" + std::to_string(size_) + " bytes)");
      }
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    if (!direct_) {
      // Buffered fallback: do not let the pages stay cached behind the budget's back.
      posix_fadvise(fd_, static_cast<off_t>(start), static_cast<off_t>(offset - start),
                    POSIX_FADV_DONTNEED);
    }
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }
  bool direct() const override { return direct_; }
  size_t alignment() const override { return direct_ ? kDirectAlignment : 1; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  bool direct_;
};

class PosixEnv : public Env {
 public:
  Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path,
                                                             bool direct) override {
    int fd = -1;
    bool is_direct = false;
    if (direct) {
      fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
      is_direct = fd >= 0;
      // EINVAL: the file system does not do O_DIRECT (tmpfs, some overlays); read buffered.
      if (fd < 0 && errno != EINVAL)
        return IoError(path + ": cannot open: " + std::strerror(errno));
    }
    if (fd < 0) fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
      const int err = errno;
      close(fd);
      return IoError(path + ": cannot stat: " + std::strerror(err));
    }
    return std::unique_ptr<RandomAccessFile>(std::make_unique<PosixRandomAccessFile>(
        path, fd, static_cast<uint64_t>(st.st_size), is_direct));
  }

  uint64_t NowMicros() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv env;
  return &env;
}

}  // namespace sparrow
