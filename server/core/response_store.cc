#include "server/core/response_store.h"

namespace sparrow::server {
namespace {

// What an entry costs beyond its text: the list node, the map node, the id twice.
constexpr size_t kEntryOverhead = 160;

}  // namespace

ResponseStore::ResponseStore(ResponseStoreOptions options) : opts_(std::move(options)) {}

void ResponseStore::DropLocked(List::iterator it) {
  stats_.bytes -= it->bytes;
  --stats_.entries;
  by_id_.erase(it->id);
  lru_.erase(it);
}

void ResponseStore::DropExpiredLocked(std::chrono::steady_clock::time_point now) {
  // Entries live for the same ttl, but use refreshes nothing: the oldest may sit anywhere.
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->expires <= now) {
      DropLocked(it);
      ++stats_.expired;
    }
    it = next;
  }
}

bool ResponseStore::Put(const std::string& id, StoredResponse r) {
  const size_t bytes = kEntryOverhead + 2 * id.size() + r.response.size() + r.conversation.size();
  if (bytes > opts_.max_bytes || opts_.max_entries == 0) return false;
  const auto now = opts_.now();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) DropLocked(it->second);
  DropExpiredLocked(now);
  while (!lru_.empty() &&
         (stats_.entries + 1 > opts_.max_entries || stats_.bytes + bytes > opts_.max_bytes)) {
    DropLocked(std::prev(lru_.end()));
    ++stats_.evicted;
  }
  lru_.push_front(
      Entry{id, std::make_shared<const StoredResponse>(std::move(r)), bytes, now + opts_.ttl});
  by_id_[id] = lru_.begin();
  stats_.bytes += bytes;
  ++stats_.entries;
  return true;
}

std::shared_ptr<const StoredResponse> ResponseStore::Get(const std::string& id) {
  const auto now = opts_.now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  if (it->second->expires <= now) {
    DropLocked(it->second);
    ++stats_.expired;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return lru_.front().value;
}

bool ResponseStore::Erase(const std::string& id) {
  const auto now = opts_.now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  const bool live = it->second->expires > now;
  DropLocked(it->second);
  if (!live) ++stats_.expired;
  return live;
}

ResponseStoreStats ResponseStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sparrow::server
