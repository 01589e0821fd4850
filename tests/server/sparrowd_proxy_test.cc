// sparrowd behind a balancer (--trusted-proxy), a real process on loopback: the failure lockout
// counts the client a trusted peer names (PROXY protocol v2 or X-Forwarded-For), so ten bad keys
// from one client lock out that client and nobody else; a peer outside --trusted-proxy can name
// no one (its PROXY header is a bad request, its X-Forwarded-For ignored); a malformed header
// closes its own connection only. Loopback has a /8: 127.0.0.2 is "another machine".
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;
using testing::StatusOf;

constexpr const char* kApiKey = "inference-key-behind-a-balancer";

// A connection to 127.0.0.1:port from the local address `source` (a 127/8 address).
int ConnectFrom(const std::string& source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &local.sin_addr);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the server answers to `bytes` sent from `source`, read until it closes.
std::string Exchange(const std::string& source, int port, const std::string& bytes) {
  const int fd = ConnectFrom(source, port);
  if (fd < 0) return "connect failed";
  testing::SendAll(fd, bytes);
  std::string out = testing::ReadUntilClose(fd);
  ::close(fd);
  return out;
}

std::string Get(const std::string& key, const std::string& extra_headers = "") {
  std::string r = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  return r + extra_headers + "\r\n";
}

// A PROXY v2 header for TCP over IPv4 from `client` (port 40000) to 127.0.0.1:8080.
std::string ProxyV2(const std::string& client) {
  std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
  h += '\x21';  // version 2, PROXY
  h += '\x11';  // TCP over IPv4
  h += std::string("\x00\x0c", 2);
  in_addr a{};
  inet_pton(AF_INET, client.c_str(), &a);
  h.append(reinterpret_cast<const char*>(&a), 4);
  h += std::string("\x7f\x00\x00\x01", 4);
  h += std::string("\x9c\x40\x1f\x90", 4);
  return h;
}

class SparrowdProxyTest : public ::testing::Test {
 protected:
  void Start(const std::string& trusted) {
    dir_ = std::filesystem::temp_directory_path() /
           ("sparrow_proxy_" + std::to_string(::getpid()) + "_" + trusted.substr(0, 9));
    std::filesystem::create_directories(dir_);
    const std::string keys = (dir_ / "api.keys").string();
    std::ofstream(keys) << kApiKey << "\n";
    chmod(keys.c_str(), 0600);
    SparrowdProcess::Options o;
    // auth_failure_limit stays at its default, 10 a minute.
    o.args = {"--model",         testing::ModelPath("stories260K.gguf"),
              "--port",          "0",
              "--grpc-port",     "-1",
              "--threads",       "1",
              "--api-key-file",  keys,
              "--trusted-proxy", trusted};
    std::string error;
    p_ = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
    ASSERT_NE(p_, nullptr) << error;
  }
  void TearDown() override {
    p_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  int port() const { return p_->http_port(); }

  std::filesystem::path dir_;
  std::unique_ptr<SparrowdProcess> p_;
};

TEST_F(SparrowdProxyTest, TenBadKeysThroughAProxyHeaderLockOutThatClientOnly) {
  Start("127.0.0.1/32");
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(), ProxyV2("192.0.2.10") + Get("wrong-key"))),
              401);
  }
  // The client is locked out, with the right key too; the balancer and its other clients not.
  EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(), ProxyV2("192.0.2.10") + Get(kApiKey))), 429);
  EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(), ProxyV2("192.0.2.11") + Get(kApiKey))), 200);
  EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(), Get(kApiKey))), 200) << "the balancer itself";
  // LOCAL (a health check): the balancer's own connection.
  std::string local("\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00", 16);
  EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(), local + Get(kApiKey))), 200);
  EXPECT_NE(p_->Stdout().find("from 192.0.2.10"), std::string::npos) << "the log names the client";
}

TEST_F(SparrowdProxyTest, TenBadKeysThroughXForwardedForLockOutThatClientOnly) {
  Start("127.0.0.1/32");
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(),
                                Get("wrong-key", "X-Forwarded-For: 198.51.100.7\r\n"))),
              401);
  }
  EXPECT_EQ(
      StatusOf(Exchange("127.0.0.1", port(), Get(kApiKey, "X-Forwarded-For: 198.51.100.7\r\n"))),
      429);
  EXPECT_EQ(
      StatusOf(Exchange("127.0.0.1", port(), Get(kApiKey, "X-Forwarded-For: 198.51.100.8\r\n"))),
      200);
  // What the client wrote itself, left of the address the proxy appended, changes nothing.
  EXPECT_EQ(StatusOf(Exchange("127.0.0.1", port(),
                              Get(kApiKey, "X-Forwarded-For: 10.9.9.9, 198.51.100.7\r\n"))),
            429);
}

TEST_F(SparrowdProxyTest, AnUntrustedPeerCanNameNoOtherClient) {
  Start("127.0.0.1/32");  // 127.0.0.2 is not in it
  // Its PROXY header is not read: to the HTTP parser those are bad bytes.
  EXPECT_EQ(StatusOf(Exchange("127.0.0.2", port(), ProxyV2("192.0.2.20") + Get(kApiKey))), 400);
  // Its X-Forwarded-For is ignored: ten bad keys under ten names lock out 127.0.0.2 itself.
  for (int i = 0; i < 10; ++i) {
    const std::string xff = "X-Forwarded-For: 203.0.113." + std::to_string(i) + "\r\n";
    EXPECT_EQ(StatusOf(Exchange("127.0.0.2", port(), Get("wrong-key", xff))), 401);
  }
  EXPECT_EQ(
      StatusOf(Exchange("127.0.0.2", port(), Get(kApiKey, "X-Forwarded-For: 203.0.113.99\r\n"))),
      429);
  EXPECT_EQ(StatusOf(Exchange("127.0.0.3", port(), Get(kApiKey))), 200);
}

TEST_F(SparrowdProxyTest, AMalformedProxyHeaderClosesThatConnectionOnly) {
  Start("127.0.0.0/8");
  std::string bad_version = ProxyV2("192.0.2.30");
  bad_version[12] = '\x11';
  std::string too_long = ProxyV2("192.0.2.30");
  too_long[14] = '\x7f';  // 32 KiB declared
  std::string udp = ProxyV2("192.0.2.30");
  udp[13] = '\x12';
  std::string bad_tlv = ProxyV2("192.0.2.30");
  bad_tlv[15] = '\x10';  // 16 bytes: the addresses, then a TLV cut short
  bad_tlv += std::string("\x01\x00\x09\x68", 4);
  const std::string cut = ProxyV2("192.0.2.30").substr(0, 14);
  for (const std::string& h : {bad_version, too_long, udp, bad_tlv}) {
    const std::string answer = Exchange("127.0.0.2", port(), h + Get(kApiKey));
    EXPECT_EQ(answer, "") << "closed without an HTTP answer";
  }
  {
    // Cut short: the header's 16 fixed bytes never all arrive; the peer gives up first.
    const int fd = ConnectFrom("127.0.0.2", port());
    ASSERT_GE(fd, 0);
    testing::SendAll(fd, cut);
    ::shutdown(fd, SHUT_WR);
    EXPECT_EQ(testing::ReadUntilClose(fd), "");
    ::close(fd);
  }
  // The server goes on serving, proxied or not.
  EXPECT_EQ(StatusOf(Exchange("127.0.0.2", port(), ProxyV2("192.0.2.31") + Get(kApiKey))), 200);
  EXPECT_EQ(StatusOf(Exchange("127.0.0.3", port(), Get(kApiKey))), 200);
  EXPECT_NE(p_->Stdout().find("PROXY protocol v2 header: version 1"), std::string::npos)
      << p_->Stdout();
}

TEST_F(SparrowdProxyTest, ABadTrustedProxyListIsAConfigError) {
  SparrowdProcess::Options o;
  o.args = {"--model",         testing::ModelPath("stories260K.gguf"),
            "--port",          "0",
            "--grpc-port",     "-1",
            "--trusted-proxy", "10.0.0.0/33"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_EQ(p, nullptr);
  EXPECT_NE(error.find("trusted_proxy: '10.0.0.0/33'"), std::string::npos) << error;
}

}  // namespace
}  // namespace sparrow
