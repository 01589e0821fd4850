#pragma once
// ResponseStore: the responses the Responses API keeps (store: true) so that a later request
// can continue the conversation (previous_response_id) or fetch or delete one by id. Bounded by
// a count and by bytes (the response's JSON plus the conversation it ends, as text), the least
// recently used going first; an entry older than the expiry is gone. A response larger than
// the whole byte bound is not kept. Memory: at most max_bytes of text plus a small fixed cost per
// entry. Thread-safe (one mutex; Get copies out a shared pointer, not the text).
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sparrow::server {

struct StoredResponse {
  std::string response;      // the response object's JSON text, as GET /v1/responses/{id} gives
  std::string conversation;  // JSON text: the list of items this response ends, its output last
};

struct ResponseStoreOptions {
  size_t max_entries = 1000;
  size_t max_bytes = size_t{32} << 20;
  std::chrono::seconds ttl{3600};
  // The clock the expiry is measured on (tests move it).
  std::function<std::chrono::steady_clock::time_point()> now = [] {
    return std::chrono::steady_clock::now();
  };
};

struct ResponseStoreStats {
  size_t entries = 0;
  size_t bytes = 0;
  uint64_t evicted = 0;  // pushed out by the bounds
  uint64_t expired = 0;
};

class ResponseStore {
 public:
  explicit ResponseStore(ResponseStoreOptions options = {});

  // Keeps `r` under `id` (replacing one of that id), evicting the least recently used entries
  // until the bounds hold. False, and nothing kept, when `r` alone exceeds max_bytes.
  bool Put(const std::string& id, StoredResponse r);
  // The entry, now the most recently used; null when unknown or expired.
  std::shared_ptr<const StoredResponse> Get(const std::string& id);
  // False when there was no such (unexpired) entry.
  bool Erase(const std::string& id);
  ResponseStoreStats stats() const;

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const StoredResponse> value;
    size_t bytes = 0;
    std::chrono::steady_clock::time_point expires;
  };
  using List = std::list<Entry>;

  void DropLocked(List::iterator it);
  void DropExpiredLocked(std::chrono::steady_clock::time_point now);

  const ResponseStoreOptions opts_;
  mutable std::mutex mu_;
  List lru_;  // guarded by mu_; most recently used first
  std::unordered_map<std::string, List::iterator> by_id_;  // guarded by mu_
  ResponseStoreStats stats_;                               // guarded by mu_
};

}  // namespace sparrow::server
