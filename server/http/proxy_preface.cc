#include "server/http/proxy_preface.h"

#include <array>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "server/core/proxy_protocol.h"

namespace sparrow::server {

namespace asio = boost::asio;

asio::awaitable<ProxyPreface> ReadProxyPreface(asio::ip::tcp::socket& socket,
                                               const std::string& peer_ip,
                                               const TrustedProxies& trusted,
                                               std::chrono::milliseconds timeout) {
  ProxyPreface out;
  out.client_ip = peer_ip;
  if (trusted.empty() || !trusted.Contains(peer_ip)) co_return out;
  // One deadline for the whole header: a balancer sends it at once, a stalled peer is cut off.
  auto armed = std::make_shared<bool>(true);
  asio::steady_timer deadline(socket.get_executor(), timeout);
  deadline.async_wait([armed, &socket](const boost::system::error_code& e) {
    if (e || !*armed) return;
    boost::system::error_code ignored;
    socket.cancel(ignored);
  });
  struct Disarm {
    std::shared_ptr<bool> armed;
    asio::steady_timer& timer;
    ~Disarm() {
      *armed = false;
      timer.cancel();
    }
  } disarm{armed, deadline};

  boost::system::error_code ec;
  uint8_t first = 0;
  co_await socket.async_receive(asio::buffer(&first, 1), asio::socket_base::message_peek,
                                asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.closed = true;
    co_return out;
  }
  if (first != kProxyV2FirstByte) co_return out;  // HTTP or TLS straight away

  std::array<uint8_t, kProxyV2MaxBytes> header{};
  co_await asio::async_read(socket, asio::buffer(header.data(), kProxyV2FixedBytes),
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.error = "cut short in its fixed part: " + ec.message();
    co_return out;
  }
  const Result<size_t> rest = ProxyV2RemainingBytes({header.data(), kProxyV2FixedBytes});
  if (!rest.ok()) {
    out.error = rest.status().message();
    co_return out;
  }
  co_await asio::async_read(socket, asio::buffer(header.data() + kProxyV2FixedBytes, *rest),
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.error =
        "cut short in its " + std::to_string(*rest) + " bytes of addresses: " + ec.message();
    co_return out;
  }
  const Result<ProxyV2Header> h = ParseProxyV2({header.data(), kProxyV2FixedBytes + *rest});
  if (!h.ok()) {
    out.error = h.status().message();
    co_return out;
  }
  out.from_header = true;
  if (!h->local) out.client_ip = h->source->ToString();
  co_return out;
}

}  // namespace sparrow::server
