#pragma once
// HttpStream: one HTTP connection's bytes, plain TCP or TLS over TCP, behind one type, so the
// session, the router and every handler serve both the same way. It is an Asio AsyncStream
// (Beast's http::async_read/async_write take it); the TCP layer underneath carries the timeouts.
// Used from the connection's strand only, like the streams it wraps.
//
// Its read_some and write_some are type-erased: every caller's buffers and handler meet the TLS
// and TCP streams only in http_stream.cc, through one buffer list and one handler type. Templated
// through, each handler type of each caller (every co_await of a Beast read or write) instantiated
// OpenSSL's io_op chain and the timed TCP operations again: 44 s to compile http_util.cc in
// Release, 87 s under ASan, most of it code generation for those copies.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sparrow::server {

class HttpStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;
  using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

  // Plain HTTP.
  explicit HttpStream(boost::asio::ip::tcp::socket socket);
  // HTTPS: Handshake() must succeed before anything else is read or written.
  HttpStream(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls);

  bool is_tls() const { return tls_.has_value(); }
  executor_type get_executor() noexcept { return tcp().get_executor(); }
  boost::beast::tcp_stream& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
  boost::asio::ip::tcp::socket& socket() { return tcp().socket(); }
  // Applies to every read and write until changed; a late operation fails with timeout.
  void expires_after(std::chrono::steady_clock::duration d) { tcp().expires_after(d); }
  void expires_never() { tcp().expires_never(); }

  // The TLS handshake, bounded by `timeout`. Returns "" or why it failed. Plain: nothing to do.
  boost::asio::awaitable<std::string> Handshake(std::chrono::milliseconds timeout);
  // Ends our side: TLS close_notify (waiting at most a second for the peer's), then a TCP
  // shutdown of sending.
  boost::asio::awaitable<void> Shutdown();
  // True when the client has gone: for plain TCP a non-blocking peek reads end-of-file (bytes
  // waiting, such as a pipelined request, are left alone); under TLS the peer's close_notify
  // arrives as bytes, so the sign is the TCP hang-up itself.
  bool PeerClosed();

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          ReadSome(Gather<boost::asio::mutable_buffer>(b), Erase(std::move(handler)));
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          WriteSome(Gather<boost::asio::const_buffer>(b), Erase(std::move(handler)));
        },
        token, buffers);
  }

  // A move-only completion handler of any type, called once.
  class IoHandler {
   public:
    template <class F>
    explicit IoHandler(F f) : impl_(std::make_unique<Impl<F>>(std::move(f))) {}
    void operator()(boost::system::error_code ec, std::size_t n) {
      std::unique_ptr<Base> once = std::move(impl_);
      once->Call(ec, n);
    }

   private:
    struct Base {
      virtual ~Base() = default;
      virtual void Call(boost::system::error_code ec, std::size_t n) = 0;
    };
    template <class F>
    struct Impl final : Base {
      explicit Impl(F f) : fn(std::move(f)) {}
      void Call(boost::system::error_code ec, std::size_t n) override { fn(ec, n); }
      F fn;
    };
    std::unique_ptr<Base> impl_;
  };

 private:
  // A write_some may take fewer bytes than offered: at most this many buffers are passed on.
  static constexpr size_t kMaxBuffers = 64;

  template <class Buffer, class Buffers>
  static std::vector<Buffer> Gather(const Buffers& buffers) {
    std::vector<Buffer> out;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && out.size() < kMaxBuffers; ++it) {
      const Buffer b(*it);
      if (b.size() > 0) out.push_back(b);
    }
    return out;
  }

  // The caller's handler, completed as Asio promises: through its own executor (inline when
  // already there), never from inside the initiating call.
  template <class Handler>
  IoHandler Erase(Handler handler) {
    auto ex = boost::asio::get_associated_executor(handler, get_executor());
    return IoHandler(
        [h = std::move(handler), ex](boost::system::error_code ec, std::size_t n) mutable {
          boost::asio::dispatch(ex, boost::beast::bind_front_handler(std::move(h), ec, n));
        });
  }

  void ReadSome(std::vector<boost::asio::mutable_buffer> buffers, IoHandler handler);
  void WriteSome(std::vector<boost::asio::const_buffer> buffers, IoHandler handler);

 private:
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<TlsStream> tls_;
};

}  // namespace sparrow::server
