#pragma once
// Wakeup: lets the scheduler thread wake a coroutine that waits on an Asio strand, without
// blocking and without lost wake-ups: Notify() posts a timer cancel onto the strand, and a
// coroutine checks its condition and starts Wait() within one strand turn, so a notify that
// comes after the check always finds the wait in place.
// Thread-safe: Notify from any thread; Wait from the owning coroutine only. The io_context
// must outlive every Notify call (shut the scheduler down before stopping the server).
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>

namespace sparrow::server {

class Wakeup : public std::enable_shared_from_this<Wakeup> {
 public:
  explicit Wakeup(boost::asio::any_io_executor strand) : timer_(strand) {}

  void Notify() {
    boost::asio::post(timer_.get_executor(),
                      [self = shared_from_this()] { self->timer_.cancel(); });
  }

  // Returns after a Notify or after `timeout`, whichever comes first.
  boost::asio::awaitable<void> Wait(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    boost::system::error_code ec;
    co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace sparrow::server
