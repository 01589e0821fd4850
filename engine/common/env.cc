#include "engine/common/env.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#ifdef SPARROW_HAVE_LIBURING
#include <liburing.h>
#endif

namespace sparrow {
namespace {

// The block O_DIRECT transfers must be aligned to: the logical block of today's devices is 512
// or 4096 bytes; 4096 serves both.
constexpr size_t kDirectAlignment = 4096;

uint64_t SteadyMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size, bool direct)
      : path_(std::move(path)), fd_(fd), size_(size), direct_(direct) {}
  ~PosixRandomAccessFile() override {
#ifdef SPARROW_HAVE_LIBURING
    if (ring_ok_) io_uring_queue_exit(&ring_);
#endif
    close(fd_);
  }

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
  uint64_t size() const override {
    return size_;
  }
  bool direct() const override {
    return direct_;
  }
  size_t alignment() const override {
    return direct_ ? kDirectAlignment : 1;
  }
  const std::string& path() const override {
    return path_;
  }

#ifdef SPARROW_HAVE_LIBURING
  // Sets up a ring of `depth` entries; false (reads stay on pread) where the kernel refuses.
  bool InitRing(int depth) {
    ring_ok_ = io_uring_queue_init(static_cast<unsigned>(depth), &ring_, 0) == 0;
    depth_ = ring_ok_ ? depth : 0;
    return ring_ok_;
  }
  std::string_view read_backend() const override {
    return ring_ok_ ? "io_uring" : "pread";
  }
  using RandomAccessFile::ReadBatch;
  Status ReadBatch(std::span<ReadRequest> reqs, const ReadDoneFn& on_done) const override;
#endif

 private:
  // A read that completed short of `want` (not at the end of the file): the rest by pread.
  Status Finish(ReadRequest& r, size_t got) const {
    if (got >= r.n) {
      if (!direct_) {
        posix_fadvise(fd_, static_cast<off_t>(r.offset), static_cast<off_t>(r.n),
                      POSIX_FADV_DONTNEED);
      }
      return Status::Ok();
    }
    return ReadAt(r.offset + got, r.n - got, static_cast<uint8_t*>(r.dst) + got);
  }

  std::string path_;
  int fd_;
  uint64_t size_;
  bool direct_;
#ifdef SPARROW_HAVE_LIBURING
  mutable std::mutex ring_mu_;  // one batch at a time owns the ring
  mutable struct io_uring ring_ {};
  bool ring_ok_ = false;
  int depth_ = 0;
#endif
};

#ifdef SPARROW_HAVE_LIBURING
Status PosixRandomAccessFile::ReadBatch(std::span<ReadRequest> reqs,
                                        const ReadDoneFn& on_done) const {
  if (!ring_ok_ || reqs.size() < 2) return RandomAccessFile::ReadBatch(reqs, on_done);
  std::lock_guard<std::mutex> lock(ring_mu_);
  std::vector<uint64_t> started(reqs.size());
  size_t next = 0, in_flight = 0, done = 0;
  Status first = Status::Ok();
  auto complete = [&](size_t i, int res) {
    ReadRequest& r = reqs[i];
    if (res < 0) {
      r.status = IoError(path_ + ": read of " + std::to_string(r.n) + " bytes at offset " +
                         std::to_string(r.offset) + " failed: " + std::strerror(-res));
    } else if (res == 0 && r.n > 0) {
      r.status = IoError(path_ + ": read at offset " + std::to_string(r.offset) +
                         " ends past the end of the file (" + std::to_string(size_) + " bytes)");
    } else {
      r.status = Finish(r, static_cast<size_t>(res));
    }
    r.micros = SteadyMicros() - started[i];
    if (!r.status.ok() && first.ok()) first = r.status;
    if (on_done) on_done(i);
  };
  while (done < reqs.size()) {
    while (next < reqs.size() && in_flight < static_cast<size_t>(depth_)) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (!sqe) break;
      ReadRequest& r = reqs[next];
      io_uring_prep_read(sqe, fd_, r.dst, static_cast<unsigned>(r.n), r.offset);
      io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(next)));
      started[next] = SteadyMicros();
      ++next;
      ++in_flight;
    }
    int ret = io_uring_submit_and_wait(&ring_, 1);
    if (ret < 0 && ret != -EINTR) {
      // The ring itself failed: what is still queued fails with it, what is in flight is
      // reaped below; nothing is left pending.
      const Status st = IoError(path_ + ": io_uring submission failed: " + std::strerror(-ret));
      if (first.ok()) first = st;
      for (; next < reqs.size(); ++next, ++done) {
        reqs[next].status = st;
        if (on_done) on_done(next);
      }
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      complete(static_cast<size_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe))),
               cqe->res);
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
    in_flight -= seen;
    done += seen;
    if (ret < 0 && ret != -EINTR && in_flight > 0) {
      // Drain what the kernel still holds before returning its buffers to the caller.
      while (in_flight > 0 && io_uring_wait_cqe(&ring_, &cqe) == 0) {
        complete(static_cast<size_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe))),
                 cqe->res);
        io_uring_cqe_seen(&ring_, cqe);
        --in_flight;
        ++done;
      }
      break;
    }
  }
  return first;
}
#endif

class PosixMappedFile : public MappedFile {
 public:
  PosixMappedFile(std::string path, void* mapping, uint64_t size)
      : path_(std::move(path)), mapping_(mapping), size_(size) {}
  ~PosixMappedFile() override {
    if (mapping_) munmap(mapping_, static_cast<size_t>(size_));
  }
  const uint8_t* data() const override { return static_cast<const uint8_t*>(mapping_); }
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  void* mapping_;
  uint64_t size_;
};

class PosixEnv : public Env {
 public:
  Result<std::unique_ptr<MappedFile>> MapReadOnly(const std::string& path) override {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return NotFound(path + ": no such file");
      return IoError(path + ": cannot open: " + std::strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      const int err = errno;
      close(fd);
      return IoError(path + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      close(fd);
      return InvalidArgument(path + ": not a regular file");
    }
    void* m = nullptr;
    if (st.st_size > 0) {
      m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        const int err = errno;
        close(fd);
        return IoError(path + ": cannot map: " + std::strerror(err));
      }
    }
    close(fd);
    return std::unique_ptr<MappedFile>(
        std::make_unique<PosixMappedFile>(path, m, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccess(const std::string& path,
                                                             const FileOptions& o) override {
    int fd = -1;
    bool is_direct = false;
    if (o.direct) {
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
    auto file = std::make_unique<PosixRandomAccessFile>(path, fd, static_cast<uint64_t>(st.st_size),
                                                        is_direct);
#ifdef SPARROW_HAVE_LIBURING
    // Where io_uring is refused (old kernels, seccomp), read_backend() says pread.
    if (o.queue_depth > 1) file->InitRing(o.queue_depth);
#endif
    return std::unique_ptr<RandomAccessFile>(std::move(file));
  }

  Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) override {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return NotFound(path + ": no such file");
      return IoError(path + ": cannot open: " + std::strerror(err));
    }
    std::string text;
    char buf[16384];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        close(fd);
        return IoError(path + ": cannot read: " + std::strerror(err));
      }
      if (n == 0) break;
      if (text.size() + static_cast<size_t>(n) > max_bytes) {
        close(fd);
        return InvalidArgument(path + ": longer than " + std::to_string(max_bytes) + " bytes");
      }
      text.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return text;
  }

  uint64_t NowMicros() const override {
    return SteadyMicros();
  }
};

}  // namespace

Status RandomAccessFile::ReadBatch(std::span<ReadRequest> reqs, const ReadDoneFn& on_done) const {
  Status first = Status::Ok();
  for (size_t i = 0; i < reqs.size(); ++i) {
    ReadRequest& r = reqs[i];
    const uint64_t t0 = SteadyMicros();
    r.status = ReadAt(r.offset, r.n, r.dst);
    r.micros = SteadyMicros() - t0;
    if (!r.status.ok() && first.ok()) first = r.status;
    if (on_done) on_done(i);
  }
  return first;
}

Env* Env::Default() {
  static PosixEnv env;
  return &env;
}

std::string ReadSmallFileOrEmpty(const std::string& path, size_t max_bytes) {
  Result<std::string> text = Env::Default()->ReadSmallFile(path, max_bytes);
  return text.ok() ? std::move(text).value() : std::string();
}

}  // namespace sparrow
