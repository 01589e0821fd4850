#include "server/core/request_registry.h"

#include <charconv>

namespace sparrow::server {
namespace {

constexpr std::string_view kPrefix = "req-";

// The number in "req-<n>", or 0.
uint64_t ParseId(std::string_view id) {
  if (!id.starts_with(kPrefix)) return 0;
  id.remove_prefix(kPrefix.size());
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  return ec == std::errc() && ptr == id.data() + id.size() ? n : 0;
}

}  // namespace

RequestRegistry::Ticket& RequestRegistry::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    if (registry_) registry_->Remove(id_);
    registry_ = o.registry_;
    id_ = std::move(o.id_);
    o.registry_ = nullptr;
  }
  return *this;
}

RequestRegistry::Ticket::~Ticket() {
  if (registry_) registry_->Remove(id_);
}

RequestRegistry::Ticket RequestRegistry::Register(ActiveRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t n = next_id_++;
  entries_[n] = Entry{std::move(request), std::chrono::steady_clock::now(), false};
  return Ticket(this, std::string(kPrefix) + std::to_string(n));
}

void RequestRegistry::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(ParseId(id));
}

std::vector<RequestSnapshot> RequestRegistry::List(bool with_prompt) const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RequestSnapshot> out;
  out.reserve(entries_.size());
  for (const auto& [n, e] : entries_) {
    RequestSnapshot s;
    s.id = std::string(kPrefix) + std::to_string(n);
    s.frontend = e.req.frontend;
    s.route = e.req.route;
    s.remote = e.req.remote;
    s.key_id = e.req.key_id;
    s.age_ms = std::chrono::duration<double, std::milli>(now - e.start).count();
    s.stream = e.req.stream;
    s.n = static_cast<int64_t>(e.req.sinks.size());
    s.prompt_tokens = static_cast<int64_t>(e.req.prompt.size());
    s.max_tokens = e.req.max_tokens;
    s.cancelling = e.cancelled;
    bool admitted = false;
    for (const auto& sink : e.req.sinks) {
      admitted |= sink->admitted();
      s.generated_tokens += sink->tokens_generated();
    }
    s.state = admitted ? "running" : "waiting";
    if (with_prompt) s.prompt = e.req.prompt;
    out.push_back(std::move(s));
  }
  return out;
}

bool RequestRegistry::Cancel(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(ParseId(id));
  if (it == entries_.end()) return false;
  it->second.cancelled = true;
  for (const auto& sink : it->second.req.sinks) sink->Cancel();
  return true;
}

size_t RequestRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace sparrow::server
