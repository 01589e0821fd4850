#include "server/admin/event_hub.h"

#include <algorithm>

namespace sparrow::server {

int64_t EventSubscription::Drain(std::vector<AdminEvent>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : queue_) out->push_back(std::move(e));
  queue_.clear();
  const int64_t dropped = dropped_;
  dropped_ = 0;
  return dropped;
}

void EventSubscription::Push(const AdminEvent& e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      queue_.pop_front();
      ++dropped_;
    }
    queue_.push_back(e);
  }
  if (on_ready_) on_ready_();
}

std::shared_ptr<EventSubscription> EventHub::Subscribe(std::function<void()> on_ready) {
  auto sub = std::make_shared<EventSubscription>(std::move(on_ready));
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {
    sub->closed_ = true;
  } else {
    subs_.push_back(sub);
  }
  return sub;
}

void EventHub::Publish(::sparrow::admin::v1::Event e) {
  std::vector<std::shared_ptr<EventSubscription>> live;
  AdminEvent shared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.set_seq(++seq_);
    shared = std::make_shared<const ::sparrow::admin::v1::Event>(std::move(e));
    subs_.erase(std::remove_if(subs_.begin(), subs_.end(),
                               [&](const std::weak_ptr<EventSubscription>& w) {
                                 auto s = w.lock();
                                 if (!s) return true;
                                 live.push_back(std::move(s));
                                 return false;
                               }),
                subs_.end());
  }
  // Outside the hub's lock: a subscriber's callback may take its own locks.
  for (auto& s : live) s->Push(shared);
}

void EventHub::SendTo(EventSubscription& sub, ::sparrow::admin::v1::Event e) {
  AdminEvent shared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.set_seq(++seq_);
    shared = std::make_shared<const ::sparrow::admin::v1::Event>(std::move(e));
  }
  sub.Push(shared);
}

void EventHub::CloseAll() {
  std::vector<std::shared_ptr<EventSubscription>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& w : subs_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
    subs_.clear();
  }
  for (auto& s : live) {
    s->closed_ = true;
    if (s->on_ready_) s->on_ready_();
  }
}

size_t EventHub::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& w : subs_) n += w.expired() ? 0 : 1;
  return n;
}

}  // namespace sparrow::server
