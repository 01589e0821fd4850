#pragma once
// RequestRegistry: the generations a frontend is serving right now, for the admin API: list
// them (who, how old, how many tokens, waiting or running) and cancel one by id. A frontend
// registers a request after the scheduler accepted it and keeps the Ticket for as long as it
// serves the request; dropping the Ticket removes it. Prompts are kept as token ids and shown
// only when an operator asks. Thread-safe.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/core/streaming_sink.h"

namespace sparrow::server {

struct ActiveRequest {
  std::string frontend;  // "http" or "grpc"
  std::string route;     // "/v1/chat/completions", "Generate", ...
  std::string remote;    // the client's address
  std::string key_id;    // the key it authenticated with ("" when the API is open)
  bool stream = false;
  int64_t max_tokens = 0;
  std::vector<int32_t> prompt;
  std::vector<std::shared_ptr<StreamingSink>> sinks;  // one per choice
};

struct RequestSnapshot {
  std::string id, frontend, route, remote, key_id;
  std::string state;  // "waiting" (queued) or "running" (admitted)
  double age_ms = 0;
  bool stream = false;
  int64_t n = 1;
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;  // all choices
  int64_t max_tokens = 0;
  bool cancelling = false;      // cancel was asked; the scheduler drops it at its next step
  std::vector<int32_t> prompt;  // only when asked for
};

class RequestRegistry {
 public:
  // Removes its request from the registry when destroyed. Move-only.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : registry_(o.registry_), id_(std::move(o.id_)) {
      o.registry_ = nullptr;
    }
    Ticket& operator=(Ticket&& o) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    const std::string& id() const { return id_; }

   private:
    friend class RequestRegistry;
    Ticket(RequestRegistry* r, std::string id) : registry_(r), id_(std::move(id)) {}
    RequestRegistry* registry_ = nullptr;
    std::string id_;
  };

  // Assigns the id ("req-<n>", unique for the life of the process).
  Ticket Register(ActiveRequest request);
  // Oldest first.
  std::vector<RequestSnapshot> List(bool with_prompt) const;
  // Cancels every choice of request `id`; false when no such request is being served.
  bool Cancel(const std::string& id);
  size_t size() const;

 private:
  struct Entry {
    ActiveRequest req;
    std::chrono::steady_clock::time_point start;
    bool cancelled = false;
  };
  void Remove(const std::string& id);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;               // guarded by mu_
  std::map<uint64_t, Entry> entries_;  // guarded by mu_; by number, so oldest first
};

}  // namespace sparrow::server
