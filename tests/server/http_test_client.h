#pragma once
// A small blocking HTTP/1.1 client (Boost.Beast) for the server tests: whole requests, SSE
// event splitting, and a raw socket for walking away mid-stream. Not thread-safe; one per
// thread.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sparrow::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json Json() const { return nlohmann::json::parse(body, nullptr, false); }
  // The payloads of "data: ..." SSE events, in order.
  std::vector<std::string> Events() const;
};

HttpReply HttpCall(uint16_t port, const std::string& method, const std::string& target,
                   const std::string& body = "",
                   const std::map<std::string, std::string>& headers = {});

inline HttpReply PostJson(uint16_t port, const std::string& target, const nlohmann::json& body,
                          const std::map<std::string, std::string>& headers = {}) {
  return HttpCall(port, "POST", target, body.dump(), headers);
}

// Sends a request on a fresh connection, reads until `min_bytes` of the response have arrived
// (or the server closes), then closes the connection without reading the rest.
std::string SendAndWalkAway(uint16_t port, const std::string& target, const std::string& body,
                            size_t min_bytes);

}  // namespace sparrow::testing
