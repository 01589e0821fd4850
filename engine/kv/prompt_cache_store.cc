#include "engine/kv/prompt_cache_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "engine/common/check.h"

namespace sparrow {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffix = ".kvb";
constexpr const char* kTmpSuffix = ".kvb.tmp";
// Reads of one block are cut into pieces this big, issued together (the file's queue depth).
constexpr size_t kReadPiece = size_t{256} << 10;

std::string ModelDirName(const KvBlockFileIdentity& id) {
  return id.model_digest + "-" + std::string(TensorTypeName(id.types.k)) + "-" +
         std::string(TensorTypeName(id.types.v)) + "-b" + std::to_string(id.block_size);
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError(path + ": write failed: " + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

PromptCacheStore::PromptCacheStore(PromptCacheOptions options)
    : opts_(std::move(options)), model_dir_(opts_.dir + "/" + ModelDirName(opts_.identity)) {}

Result<std::unique_ptr<PromptCacheStore>> PromptCacheStore::Open(PromptCacheOptions options) {
  SPARROW_CHECK(options.identity.model_digest.size() == 16 && options.identity.block_bytes > 0);
  if (options.dir.empty()) return InvalidArgument("prompt cache: no directory given");
  std::unique_ptr<PromptCacheStore> store(new PromptCacheStore(std::move(options)));
  std::error_code ec;
  fs::create_directories(store->model_dir_, ec);
  if (ec) {
    return IoError("prompt cache: cannot create '" + store->model_dir_ + "': " + ec.message());
  }
  SPARROW_RETURN_IF_ERROR(store->Index());
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
}

Status PromptCacheStore::Index() {
  struct Found {
    std::string path;
    int64_t bytes;
    fs::file_time_type mtime;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(opts_.dir, ec)) {
    if (!sub.is_directory(ec)) continue;
    for (const auto& f : fs::directory_iterator(sub.path(), ec)) {
      const std::string path = f.path().string();
      if (EndsWith(path, kTmpSuffix)) {
        fs::remove(f.path(), ec);  // a write a crash cut short
      } else if (EndsWith(path, kSuffix) && f.is_regular_file(ec)) {
        found.push_back({path, static_cast<int64_t>(f.file_size(ec)), f.last_write_time(ec)});
      }
    }
  }
  if (ec) return IoError("prompt cache: cannot list '" + opts_.dir + "': " + ec.message());
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) {
    lru_.push_back({f.path, f.bytes});
    by_path_[f.path] = std::prev(lru_.end());
    bytes_ += f.bytes;
  }
  EvictOverLimit();
  return Status::Ok();
}

PromptCacheStore::~PromptCacheStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string PromptCacheStore::PathOf(uint64_t hash) const {
  char name[17];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(hash));
  return model_dir_ + "/" + name + kSuffix;
}

bool PromptCacheStore::Contains(uint64_t hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_path_.count(PathOf(hash)) > 0;
}

void PromptCacheStore::Save(uint64_t hash, const uint8_t* bytes) {
  const std::string path = PathOf(hash);
  std::lock_guard<std::mutex> lock(mu_);
  if (by_path_.count(path) > 0) {
    Touch(path);  // on flash already (read back, or written before)
    return;
  }
  if (queued_.count(hash) > 0) return;
  if (pending_bytes_ + block_bytes() > opts_.max_pending_bytes || block_bytes() > opts_.max_bytes) {
    ++counts_.dropped;
    return;
  }
  queue_.push_back({hash, std::vector<uint8_t>(bytes, bytes + block_bytes())});
  queued_.insert(hash);
  pending_bytes_ += block_bytes();
  cv_.notify_all();
}

void PromptCacheStore::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is written
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const Status st = WriteFile(p);
    lock.lock();
    if (st.ok()) {
      const std::string path = PathOf(p.hash);
      lru_.push_back({path, static_cast<int64_t>(kKvBlockHeaderBytes + p.bytes.size())});
      by_path_[path] = std::prev(lru_.end());
      bytes_ += lru_.back().bytes;
      ++counts_.writes;
      EvictOverLimit();
    } else {
      ++counts_.dropped;
      spdlog::warn("prompt cache: block not kept: {}", st.message());
    }
    queued_.erase(p.hash);
    pending_bytes_ -= static_cast<int64_t>(p.bytes.size());
    cv_.notify_all();
  }
}

Status PromptCacheStore::WriteFile(const Pending& p) {
  // Written aside and renamed into place: a reader (this process or the next) sees a whole file
  // or none.
  const std::string path = PathOf(p.hash);
  const std::string tmp = model_dir_ + "/" + path.substr(model_dir_.size() + 1, 16) + kTmpSuffix;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  const auto header = EncodeKvBlockHeader(opts_.identity, p.hash, p.bytes);
  Status st = WriteAll(fd, header.data(), header.size(), tmp);
  if (st.ok()) st = WriteAll(fd, p.bytes.data(), p.bytes.size(), tmp);
  if (::close(fd) != 0 && st.ok()) st = IoError(tmp + ": close failed: " + std::strerror(errno));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = IoError(path + ": rename failed: " + std::strerror(errno));
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

bool PromptCacheStore::Load(uint64_t hash, uint8_t* bytes) {
  const std::string path = PathOf(hash);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (by_path_.count(path) == 0) return false;
  }
  const Status st = ReadChecked(path, hash, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (st.ok()) {
    ++counts_.hits;
    Touch(path);
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // the LRU order survives a restart
    return true;
  }
  if (st.code() == StatusCode::kNotFound) {
    Forget(path);  // evicted meanwhile
    return false;
  }
  spdlog::warn("prompt cache: refused {}: {}; the block is recomputed", path, st.message());
  ++counts_.refused;
  ::unlink(path.c_str());
  Forget(path);
  return false;
}

Status PromptCacheStore::ReadChecked(const std::string& path, uint64_t hash, uint8_t* bytes) {
  FileOptions fo;
  fo.direct = false;  // header and payload are not sector-aligned; blocks are small
  fo.queue_depth = opts_.io_depth;
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                           opts_.env->OpenRandomAccess(path, fo));
  std::array<uint8_t, kKvBlockHeaderBytes> header{};
  if (file->size() < kKvBlockHeaderBytes) {
    return Corrupt("a file of " + std::to_string(file->size()) + " bytes has no header");
  }
  SPARROW_RETURN_IF_ERROR(file->ReadAt(0, header.size(), header.data()));
  SPARROW_ASSIGN_OR_RETURN(const uint64_t sum,
                           CheckKvBlockHeader(header, opts_.identity, hash, file->size()));
  const auto n = static_cast<size_t>(block_bytes());
  std::vector<ReadRequest> reads;
  for (size_t off = 0; off < n; off += kReadPiece) {
    ReadRequest r;
    r.offset = kKvBlockHeaderBytes + off;
    r.n = std::min(kReadPiece, n - off);
    r.dst = bytes + off;
    reads.push_back(r);
  }
  SPARROW_RETURN_IF_ERROR(file->ReadBatch(reads));
  if (Xxh64(bytes, n) != sum) return Corrupt("payload checksum mismatch");
  return Status::Ok();
}

void PromptCacheStore::Forget(const std::string& path) {
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return;
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  by_path_.erase(it);
}

void PromptCacheStore::Touch(const std::string& path) {
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return;
  lru_.splice(lru_.end(), lru_, it->second);
}

void PromptCacheStore::EvictOverLimit() {
  while (bytes_ > opts_.max_bytes && !lru_.empty()) {
    const std::string path = lru_.front().path;
    ::unlink(path.c_str());
    Forget(path);
    ++counts_.evicted;
  }
}

void PromptCacheStore::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queued_.empty(); });
}

PromptCacheStats PromptCacheStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PromptCacheStats s = counts_;
  s.files = static_cast<int64_t>(lru_.size());
  s.bytes = bytes_;
  s.pending = static_cast<int64_t>(queue_.size());
  return s;
}

}  // namespace sparrow
