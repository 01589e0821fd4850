#pragma once
// RunOnPreparePool: runs a request's preparation (parsing, the chat template, tokenizing) on the
// server's preparation pool (HttpServerState::prepare) while the calling coroutine waits
// without holding its io thread; on the io thread itself when the server has no pool. `fn` must
// own what it reads (capture by value): the connection, and the request with it, may be dropped
// at shutdown while it runs; it is moved from. Returns what `fn` returns (default-constructible
// and movable). `fn` is a named lvalue of the caller, not a temporary: GCC 12 destroys a
// temporary lambda of a co_await expression twice (its captures' shared pointers and strings
// with it).
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>

#include "server/http/http_router.h"
#include "server/http/wakeup.h"

namespace sparrow::server {

template <class Fn>
auto RunOnPreparePool(HttpExchange& ex, Fn& fn) -> boost::asio::awaitable<decltype(fn())> {
  using T = decltype(fn());
  boost::asio::thread_pool* pool = ex.state != nullptr ? ex.state->prepare.get() : nullptr;
  if (pool == nullptr) co_return fn();
  struct Handoff {
    T value;
    std::atomic<bool> done{false};
  };
  auto handoff = std::make_shared<Handoff>();
  auto wakeup = std::make_shared<Wakeup>(co_await boost::asio::this_coro::executor);
  boost::asio::post(*pool, [handoff, wakeup, fn = std::move(fn)]() mutable {
    handoff->value = fn();
    handoff->done.store(true, std::memory_order_release);
    wakeup->Notify();
  });
  while (!handoff->done.load(std::memory_order_acquire)) {
    co_await wakeup->Wait(std::chrono::milliseconds(250));
  }
  co_return std::move(handoff->value);
}

}  // namespace sparrow::server
