#include "tests/server/http_test_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace sparrow::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> HttpReply::Events() const {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

HttpReply HttpCall(uint16_t port, const std::string& method, const std::string& target,
                   const std::string& body, const std::map<std::string, std::string>& headers) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  http::write(stream, req, ec);
  HttpReply reply;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(stream, buffer, parser, ec);
  if (ec && !parser.is_header_done()) {
    reply.status = -1;
    reply.body = ec.message();
    return reply;
  }
  auto res = parser.release();
  reply.status = static_cast<int>(res.result_int());
  for (const auto& f : res)
    reply.headers[Lower(std::string(f.name_string()))] = std::string(f.value());
  reply.body = res.body();
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return reply;
}

std::string SendAndWalkAway(uint16_t port, const std::string& target, const std::string& body,
                            size_t min_bytes) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::string req =
      "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
      "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  asio::write(socket, asio::buffer(req));
  std::string got;
  char buf[256];
  beast::error_code ec;
  while (got.size() < min_bytes && !ec) {
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    got.append(buf, n);
  }
  // Abortive close: the server's next write fails at once.
  socket.set_option(asio::socket_base::linger(true, 0), ec);
  socket.close(ec);
  return got;
}

}  // namespace sparrow::testing
