#pragma once
// HttpStream: one HTTP connection's bytes, plain TCP or TLS over TCP, behind one type, so the
// session, the router and every handler serve both the same way. It is an Asio AsyncStream
// (Beast's http::async_read/async_write take it); the TCP layer underneath carries the timeouts.
// Used from the connection's strand only, like the streams it wraps.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <optional>
#include <string>

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
          if (tls_) {
            tls_->async_read_some(b, std::move(handler));
          } else {
            plain_->async_read_some(b, std::move(handler));
          }
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          if (tls_) {
            tls_->async_write_some(b, std::move(handler));
          } else {
            plain_->async_write_some(b, std::move(handler));
          }
        },
        token, buffers);
  }

 private:
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<TlsStream> tls_;
};

}  // namespace sparrow::server
