#pragma once
// EventHub: fans admin events out to subscribers (the SSE route, the gRPC WatchEvents call): a
// status snapshot every second and one event per admin action, as admin.proto's Event. Each
// subscriber has a bounded queue; one that does not read loses its oldest events, never blocks
// the publisher. Thread-safe.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "sparrow/admin/v1/admin.pb.h"

namespace sparrow::server {

// One event as every subscriber gets it: built once, shared, never changed (its seq set; its
// dropped count is each subscriber's own, from Drain).
using AdminEvent = std::shared_ptr<const ::sparrow::admin::v1::Event>;

class EventSubscription {
 public:
  static constexpr size_t kMaxQueued = 64;
  explicit EventSubscription(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  // Moves the queued events to `*out`; the count of events dropped since the last call.
  int64_t Drain(std::vector<AdminEvent>* out);
  // True once the hub was closed (the server is shutting down): end the stream.
  bool closed() const { return closed_.load(); }

 private:
  friend class EventHub;
  void Push(const AdminEvent& e);
  std::function<void()> on_ready_;
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::deque<AdminEvent> queue_;  // guarded by mu_
  int64_t dropped_ = 0;           // guarded by mu_
};

class EventHub {
 public:
  // The subscription lasts until the returned pointer is dropped. `on_ready` is called (on the
  // publisher's thread; it must not block) after events are queued.
  std::shared_ptr<EventSubscription> Subscribe(std::function<void()> on_ready);
  // Numbers `e` (its seq) and queues it for every subscriber.
  void Publish(::sparrow::admin::v1::Event e);
  // To one subscriber only (its first snapshot).
  void SendTo(EventSubscription& sub, ::sparrow::admin::v1::Event e);
  size_t subscribers() const;
  // Marks every subscription closed and wakes it, so watchers end before a shutdown.
  void CloseAll();

 private:
  mutable std::mutex mu_;
  int64_t seq_ = 0;                                     // guarded by mu_
  bool closed_ = false;                                 // guarded by mu_
  std::vector<std::weak_ptr<EventSubscription>> subs_;  // guarded by mu_
};

}  // namespace sparrow::server
