#include "server/http/http_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cerrno>

namespace sparrow::server {

namespace asio = boost::asio;
namespace beast = boost::beast;

HttpStream::HttpStream(asio::ip::tcp::socket socket) {
  plain_.emplace(std::move(socket));
}

HttpStream::HttpStream(asio::ip::tcp::socket socket, asio::ssl::context& tls) {
  tls_.emplace(std::move(socket), tls);
}

asio::awaitable<std::string> HttpStream::Handshake(std::chrono::milliseconds timeout) {
  if (!tls_) co_return std::string();
  boost::system::error_code ec;
  tcp().expires_after(timeout);
  // Look at the first bytes: a browser or curl pointed at http:// gets a readable answer
  // instead of a connection closed for no visible reason.
  beast::flat_buffer buffer;
  const bool hello = co_await beast::async_detect_ssl(
      tcp(), buffer, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec && !hello) {
    static const std::string kBody =
        R"j({"error":{"message":"This port serves HTTPS: use https:// (plain HTTP was sent)",)j"
        R"j("type":"invalid_request_error","param":null,"code":"https_required"}})j";
    const std::string answer =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(kBody.size()) + "\r\nConnection: close\r\n\r\n" + kBody;
    co_await asio::async_write(tcp(), asio::buffer(answer),
                               asio::redirect_error(asio::use_awaitable, ec));
    tcp().expires_never();
    socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    co_return "plain HTTP sent to the HTTPS port (answered 400)";
  }
  if (!ec) {
    const size_t used =
        co_await tls_->async_handshake(asio::ssl::stream_base::server, buffer.data(),
                                       asio::redirect_error(asio::use_awaitable, ec));
    buffer.consume(used);
  }
  tcp().expires_never();
  if (!ec) co_return std::string();
  if (ec == beast::error::timeout) {
    co_return "no TLS handshake within " + std::to_string(timeout.count()) + " ms";
  }
  // OpenSSL's reason names the problem: "no shared cipher", "unsupported protocol", "tlsv1
  // alert unknown ca" (the client does not trust our certificate).
  co_return ec.message();
}

asio::awaitable<void> HttpStream::Shutdown() {
  boost::system::error_code ec;
  if (tls_) {
    tcp().expires_after(std::chrono::seconds(1));
    co_await tls_->async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    tcp().expires_never();
  }
  socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

void HttpStream::ReadSome(std::vector<asio::mutable_buffer> buffers, IoHandler handler) {
  if (tls_) {
    tls_->async_read_some(std::move(buffers), std::move(handler));
  } else {
    plain_->async_read_some(std::move(buffers), std::move(handler));
  }
}

void HttpStream::WriteSome(std::vector<asio::const_buffer> buffers, IoHandler handler) {
  if (tls_) {
    tls_->async_write_some(std::move(buffers), std::move(handler));
  } else {
    plain_->async_write_some(std::move(buffers), std::move(handler));
  }
}

bool HttpStream::PeerClosed() {
  const int fd = socket().native_handle();
  if (tls_) {
    pollfd p{fd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }
  char byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace sparrow::server
