// TLS of a real sparrowd child process on loopback, with a certificate made in the test the way
// `sparrowctl cert` makes one: HTTPS (TLS 1.2+ only, plain HTTP to the port answered with a 400
// that says so), gRPC over TLS for sparrowctl with --ca (and the advice it prints without it or
// with another certificate), the start-up rules (non-loopback needs TLS or --allow-insecure; bad
// certificate files stop the server with a message naming them).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "clients/sparrowctl/self_signed_cert.h"
#include "sparrow/admin/v1/admin.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using json = nlohmann::json;
using testing::RawExchange;
using testing::SparrowdProcess;
using testing::StatusOf;

constexpr const char* kAdminKey = "tls-admin-key-0123456789abcdef";

struct Files {
  std::string dir;
  Files() {
    char tmpl[] = "/tmp/sparrow_tls_XXXXXX";
    dir = mkdtemp(tmpl);
    MakeCert("sparrow");
    MakeCert("other");  // a certificate the server does not have: clients must not trust it
  }
  ~Files() { std::system(("rm -rf " + dir).c_str()); }
  std::string Path(const std::string& name) const { return dir + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
    chmod(Path(name).c_str(), 0600);
  }
  void MakeCert(const std::string& stem) const {
    ctl::CertPem pem;
    std::string error;
    ASSERT_TRUE(ctl::MakeSelfSignedCert({}, &pem, &error)) << error;
    Write(stem + ".crt", pem.certificate);
    Write(stem + ".key", pem.private_key);
  }
};

std::unique_ptr<SparrowdProcess> StartTls(const Files& f, std::vector<std::string> extra = {}) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--grpc-port", "0",
            "--threads",   "1",
            "--admin-key", kAdminKey,
            "--tls-cert",  f.Path("sparrow.crt"),
            "--tls-key",   f.Path("sparrow.key")};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

struct HttpsReply {
  std::string raw;    // the whole response, as read until the server closed
  std::string error;  // why the TLS connection failed ("" when it did not)
};

// One request over TLS, trusting only `ca_file` and checking that the certificate names `name`.
HttpsReply Https(int port, const std::string& ca_file, const std::string& request,
                 const std::string& name = "localhost", int max_version = 0) {
  HttpsReply r;
  asio::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx.native_handle(), max_version);
  boost::system::error_code ec;
  ctx.load_verify_file(ca_file, ec);
  if (ec) {
    r.error = "load_verify_file: " + ec.message();
    return r;
  }
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<asio::ip::tcp::socket> s(io, ctx);
  s.set_verify_callback(ssl::rfc2818_verification(name));
  SSL_set_tlsext_host_name(s.native_handle(), name.c_str());
  s.next_layer().connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
  timeval tv{20, 0};
  setsockopt(s.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (!ec) s.handshake(ssl::stream_base::client, ec);
  if (ec) {
    r.error = ec.message();
    return r;
  }
  asio::write(s, asio::buffer(request), ec);
  char buf[4096];
  for (;;) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    r.raw.append(buf, n);
    if (ec) break;
  }
  return r;
}

std::string Get(const std::string& path, const std::string& key = "") {
  std::string r = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  return r + "\r\n";
}

json BodyOf(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return json::parse(at == std::string::npos ? "" : raw.substr(at + 4), nullptr, false);
}

using CtlRun = testing::CommandResult;

CtlRun Ctl(const std::string& args) {
  // The operator's own device list stays out.
  return testing::RunCommand("SPARROW_CTL_CONFIG=/dev/null " + std::string(SPARROWCTL) + " " +
                             args);
}

TEST(SparrowdTlsTest, HttpsServesAndPlainHttpIsToldToUseHttps) {
  Files f;
  auto p = StartTls(f);
  ASSERT_NE(p, nullptr);
  const int port = p->http_port();
  EXPECT_NE(p->Stdout().find("HTTP listening on https://"), std::string::npos) << p->Stdout();

  const HttpsReply health = Https(port, f.Path("sparrow.crt"), Get("/health"));
  ASSERT_EQ(health.error, "");
  EXPECT_EQ(StatusOf(health.raw), 200) << health.raw;

  // A generation, streamed, over TLS: the session's reads and writes all go through it.
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":12,"stream":true})";
  const HttpsReply gen = Https(port, f.Path("sparrow.crt"),
                               "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
                               "Connection: close\r\nContent-Type: application/json\r\n"
                               "Content-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(gen.error, "");
  EXPECT_EQ(StatusOf(gen.raw), 200) << gen.raw;
  EXPECT_NE(gen.raw.find("data: [DONE]"), std::string::npos) << gen.raw;

  // The admin API over TLS, with its key.
  const HttpsReply status = Https(port, f.Path("sparrow.crt"), Get("/admin/v1/status", kAdminKey));
  ASSERT_EQ(status.error, "");
  EXPECT_EQ(StatusOf(status.raw), 200) << status.raw;
  EXPECT_EQ(BodyOf(status.raw)["model"]["id"], "stories260K");

  // The certificate names 127.0.0.1 too, as a laptop dialling the address would check.
  EXPECT_EQ(Https(port, f.Path("sparrow.crt"), Get("/health"), "127.0.0.1").error, "");

  // Plain HTTP to the HTTPS port: a readable 400, not a silent close.
  const std::string plain = RawExchange("127.0.0.1", port, Get("/health"));
  EXPECT_EQ(StatusOf(plain), 400) << plain;
  EXPECT_EQ(BodyOf(plain)["error"]["code"], "https_required") << plain;

  // A client that trusts another certificate refuses the server, and the server counts it.
  const HttpsReply untrusted = Https(port, f.Path("other.crt"), Get("/health"));
  EXPECT_NE(untrusted.error, "");
  EXPECT_EQ(untrusted.raw, "");

  // TLS 1.1 and older are refused.
  const HttpsReply old =
      Https(port, f.Path("sparrow.crt"), Get("/health"), "localhost", TLS1_1_VERSION);
  EXPECT_NE(old.error, "");

  const HttpsReply metrics = Https(port, f.Path("sparrow.crt"), Get("/metrics"));
  ASSERT_EQ(metrics.error, "");
  const std::string name = "sparrow_http_tls_handshake_failures_total ";
  const size_t at = metrics.raw.find("\n" + name);
  ASSERT_NE(at, std::string::npos) << metrics.raw;
  EXPECT_GE(std::stoi(metrics.raw.substr(at + 1 + name.size())), 3) << metrics.raw;
}

std::string Request(const std::string& method, const std::string& path, const std::string& key,
                    const std::string& body) {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!key.empty()) r += "Authorization: Bearer " + key + "\r\n";
  r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
       "\r\n\r\n";
  return r + body;
}

TEST(SparrowdTlsTest, EveryAdminRouteAndRpcOverTlsChecksTheKey) {
  Files f;
  const std::string api_key = "tls-inference-key";
  auto p = StartTls(f, {"--api-key", api_key, "--auth-failure-limit", "1000"});
  ASSERT_NE(p, nullptr);
  struct Route {
    std::string method, path, body;
    int with_admin_key;  // without --model-dir the model routes are 403 reload_disabled
  };
  const std::vector<Route> routes = {{"GET", "/admin/v1/status", "", 200},
                                     {"GET", "/admin/v1/requests", "", 200},
                                     {"DELETE", "/admin/v1/requests/req-9", "", 404},
                                     {"POST", "/admin/v1/drain", "", 200},
                                     {"POST", "/admin/v1/resume", "", 200},
                                     {"PUT", "/admin/v1/log-level", R"({"level":"info"})", 200},
                                     {"GET", "/admin/v1/models", "", 403},
                                     {"POST", "/admin/v1/reload", R"({"model":"x"})", 403}};
  const std::string ca = f.Path("sparrow.crt");
  for (const Route& r : routes) {
    SCOPED_TRACE(r.method + " " + r.path);
    auto status = [&](const std::string& key) {
      const HttpsReply reply = Https(p->http_port(), ca, Request(r.method, r.path, key, r.body));
      EXPECT_EQ(reply.error, "");
      return StatusOf(reply.raw);
    };
    EXPECT_EQ(status(""), 401);
    EXPECT_EQ(status("wrong-key-wrong-key"), 401);
    EXPECT_EQ(status(api_key), 403);
    EXPECT_EQ(status(kAdminKey), r.with_admin_key);
  }

  grpc::SslCredentialsOptions tls;
  std::ifstream in(ca);
  std::stringstream pem;
  pem << in.rdbuf();
  tls.pem_root_certs = pem.str();
  auto stub = admin::v1::Admin::NewStub(grpc::CreateChannel(
      "localhost:" + std::to_string(p->grpc_port()), grpc::SslCredentials(tls)));
  namespace adminpb = admin::v1;
  using Code = grpc::StatusCode;
  struct Rpc {
    const char* name;
    std::function<grpc::Status(grpc::ClientContext*)> call;
    Code with_admin_key;
  };
  const std::vector<Rpc> rpcs = {
      {"GetStatus",
       [&](grpc::ClientContext* c) {
         adminpb::ServerStatus s;
         return stub->GetStatus(c, {}, &s);
       },
       Code::OK},
      {"ListRequests",
       [&](grpc::ClientContext* c) {
         adminpb::ListRequestsResponse r;
         return stub->ListRequests(c, {}, &r);
       },
       Code::OK},
      {"CancelRequest",
       [&](grpc::ClientContext* c) {
         adminpb::CancelRequestRequest req;
         req.set_id("req-9");
         adminpb::CancelRequestResponse r;
         return stub->CancelRequest(c, req, &r);
       },
       Code::NOT_FOUND},
      {"Drain",
       [&](grpc::ClientContext* c) {
         adminpb::DrainResponse r;
         return stub->Drain(c, {}, &r);
       },
       Code::OK},
      {"Resume",
       [&](grpc::ClientContext* c) {
         adminpb::DrainResponse r;
         return stub->Resume(c, {}, &r);
       },
       Code::OK},
      {"SetLogLevel",
       [&](grpc::ClientContext* c) {
         adminpb::SetLogLevelRequest req;
         req.set_level("info");
         adminpb::SetLogLevelResponse r;
         return stub->SetLogLevel(c, req, &r);
       },
       Code::OK},
      {"ListModels",
       [&](grpc::ClientContext* c) {
         adminpb::ListModelsResponse r;
         return stub->ListModels(c, {}, &r);
       },
       Code::FAILED_PRECONDITION},
      {"Reload",
       [&](grpc::ClientContext* c) {
         adminpb::ReloadRequest req;
         req.set_model("x");
         adminpb::ReloadResponse r;
         return stub->Reload(c, req, &r);
       },
       Code::FAILED_PRECONDITION},
  };
  for (const Rpc& rpc : rpcs) {
    SCOPED_TRACE(rpc.name);
    auto code = [&](const std::string& key) {
      grpc::ClientContext c;
      if (!key.empty()) c.AddMetadata("authorization", "Bearer " + key);
      c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      return rpc.call(&c).error_code();
    };
    EXPECT_EQ(code(""), Code::UNAUTHENTICATED);
    EXPECT_EQ(code("wrong-key-wrong-key"), Code::UNAUTHENTICATED);
    EXPECT_EQ(code(api_key), Code::PERMISSION_DENIED);
    EXPECT_EQ(code(kAdminKey), rpc.with_admin_key);
  }
}

// sparrowctl's failures are its own lines ("sparrowctl: ..." and indented advice): gRPC's log
// lines about the same handshake ("E1128 ... ssl_transport_security.cc ...") stay out.
void ExpectOnlyOwnLines(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_TRUE(line.rfind("sparrowctl: ", 0) == 0 || line.rfind("  ", 0) == 0) << out;
  }
}

TEST(SparrowdTlsTest, SparrowctlPinsTheCertificateAndExplainsTlsFailures) {
  Files f;
  auto p = StartTls(f);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->Stdout().find("(TLS)"), std::string::npos) << p->Stdout();
  const std::string target = "--port " + std::to_string(p->grpc_port()) + " ";
  setenv("SPARROW_ADMIN_KEY", kAdminKey, 1);

  const CtlRun ok = Ctl(target + "--ca " + f.Path("sparrow.crt") + " --json status");
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(json::parse(ok.out, nullptr, false)["model"]["id"], "stories260K") << ok.out;
  const CtlRun gen =
      Ctl(target + "--ca " + f.Path("sparrow.crt") + " generate 'Once upon' --max-tokens 4");
  EXPECT_EQ(gen.exit_code, 0) << gen.out;

  // Another certificate: not trusted, and the advice names --ca.
  const CtlRun wrong = Ctl(target + "--ca " + f.Path("other.crt") + " status");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("--ca"), std::string::npos) << wrong.out;
  ExpectOnlyOwnLines(wrong.out);

  // No TLS at all against a TLS server: unreachable, with the hint to add --ca.
  const CtlRun plain = Ctl(target + "--timeout-ms 3000 status");
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  EXPECT_NE(plain.out.find("add --ca"), std::string::npos) << plain.out;
  ExpectOnlyOwnLines(plain.out);

  // A device list names the same device: address, certificate and key come from it.
  f.Write("admin.key", std::string("laptop ") + kAdminKey + "\n");
  f.Write("ctl.yaml", "default: here\ndevices:\n  here:\n    host: 127.0.0.1\n    port: " +
                          std::to_string(p->grpc_port()) +
                          "\n    ca: sparrow.crt\n    key_file: admin.key\n");
  unsetenv("SPARROW_ADMIN_KEY");
  const CtlRun by_device = Ctl("--config " + f.Path("ctl.yaml") + " --json status");
  ASSERT_EQ(by_device.exit_code, 0) << by_device.out;
  EXPECT_EQ(json::parse(by_device.out, nullptr, false)["model"]["id"], "stories260K");
  const CtlRun no_such = Ctl("--config " + f.Path("ctl.yaml") + " --device tablet status");
  EXPECT_EQ(no_such.exit_code, 2) << no_such.out;
  EXPECT_NE(no_such.out.find("tablet"), std::string::npos) << no_such.out;

  // SPARROW_ADMIN_KEY_FILE names the key file as --key-file does; SPARROW_ADMIN_KEY holds the
  // key itself, and --help says which is which.
  setenv("SPARROW_ADMIN_KEY_FILE", f.Path("admin.key").c_str(), 1);
  const CtlRun by_key_file = Ctl(target + "--ca " + f.Path("sparrow.crt") + " status --json");
  unsetenv("SPARROW_ADMIN_KEY_FILE");
  ASSERT_EQ(by_key_file.exit_code, 0) << by_key_file.out;
  EXPECT_EQ(json::parse(by_key_file.out, nullptr, false)["model"]["id"], "stories260K");
  const CtlRun help = Ctl("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("SPARROW_ADMIN_KEY_FILE: the file's path"), std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("SPARROW_ADMIN_KEY: the key itself"), std::string::npos) << help.out;
  setenv("SPARROW_ADMIN_KEY", kAdminKey, 1);

  // A --ca file that is not a certificate is a usage error, said before any connection.
  const CtlRun bad = Ctl(target + "--ca " + f.Path("sparrow.key") + " status");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("sparrow.key"), std::string::npos) << bad.out;
  unsetenv("SPARROW_ADMIN_KEY");
}

TEST(SparrowdTlsTest, SparrowctlCertWritesAPairTheServerAccepts) {
  Files f;
  const CtlRun made = Ctl("cert --out " + f.dir + " --name device.local --ip 10.9.8.7");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  struct stat st {};
  ASSERT_EQ(stat(f.Path("sparrow.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the private key is the owner's only
  {
    // A leaf (CA:FALSE): trusting it trusts no certificate it could sign; for a server and, on
    // the shard link, a client; with this host's names.
    std::ifstream in(f.Path("sparrow.crt"));
    std::stringstream pem;
    pem << in.rdbuf();
    const std::string text = pem.str();
    BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ASSERT_NE(cert, nullptr);
    EXPECT_EQ(X509_check_ca(cert), 0) << "the certificate is an authority";
    EXPECT_NE(X509_get_extension_flags(cert) & EXFLAG_BCONS, 0u);  // says so explicitly
    EXPECT_EQ(X509_get_key_usage(cert) & KU_KEY_CERT_SIGN, 0u);
    EXPECT_NE(X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT, 0u);
    EXPECT_EQ(X509_check_host(cert, "device.local", 0, 0, nullptr), 1);
    EXPECT_EQ(X509_check_host(cert, "localhost", 0, 0, nullptr), 1);
    // It verifies against itself alone (how --ca pins it).
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, cert);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, cert, nullptr);
    EXPECT_EQ(X509_verify_cert(ctx), 1)
        << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(cert);
  }
  auto p = StartTls(f);  // sparrow.crt/.key are now the ones sparrowctl wrote
  ASSERT_NE(p, nullptr);
  const HttpsReply r = Https(p->http_port(), f.Path("sparrow.crt"), Get("/health"), "device.local");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(StatusOf(r.raw), 200) << r.raw;
  EXPECT_EQ(Https(p->http_port(), f.Path("sparrow.crt"), Get("/health"), "10.9.8.7").error, "");
  // A name the certificate does not list fails the client's check.
  EXPECT_NE(Https(p->http_port(), f.Path("sparrow.crt"), Get("/health"), "elsewhere.example").error,
            "");

  const CtlRun bad = Ctl("cert --out " + f.dir + " --ip 300.1.1.1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("300.1.1.1"), std::string::npos) << bad.out;
}

// What a start that must fail printed ("" if it started after all).
struct Refusal {
  std::string err;
};

Refusal StartFails(std::vector<std::string> args) {
  SparrowdProcess::Options o;
  o.args = {"--model", testing::ModelPath("stories260K.gguf"), "--port", "0", "--grpc-port", "0"};
  o.args.insert(o.args.end(), args.begin(), args.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  Refusal r;
  if (p != nullptr) return r;  // it started: the caller's expectation fails
  r.err = error;
  return r;
}

TEST(SparrowdTlsTest, OffLoopbackTheServerWantsTlsOrAnExplicitAllowInsecure) {
  Files f;
  const Refusal clear = StartFails({"--host", "0.0.0.0", "--api-key", "k"});
  EXPECT_NE(clear.err.find("--allow-insecure"), std::string::npos) << clear.err;

  // With the switch it starts, and says loudly what that means.
  SparrowdProcess::Options o;
  o.args = {"--model",         testing::ModelPath("stories260K.gguf"),
            "--port",          "0",
            "--host",          "0.0.0.0",
            "--api-key",       "k",
            "--grpc-port",     "-1",
            "--allow-insecure"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_NE(p->Stdout().find("INSECURE"), std::string::npos) << p->Stdout();
  p.reset();

  // With TLS it starts without the switch.
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--host",      "0.0.0.0",
            "--api-key",   "k",
            "--grpc-port", "-1",
            "--tls-cert",  f.Path("sparrow.crt"),
            "--tls-key",   f.Path("sparrow.key")};
  p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_EQ(p->Stdout().find("INSECURE"), std::string::npos) << p->Stdout();
}

TEST(SparrowdTlsTest, BadCertificateFilesStopTheStartNamingTheFile) {
  Files f;
  f.Write("junk.pem", "not a certificate\n");
  const Refusal junk =
      StartFails({"--tls-cert", f.Path("junk.pem"), "--tls-key", f.Path("sparrow.key")});
  EXPECT_NE(junk.err.find("junk.pem"), std::string::npos) << junk.err;
  const Refusal missing =
      StartFails({"--tls-cert", f.Path("nope.crt"), "--tls-key", f.Path("sparrow.key")});
  EXPECT_NE(missing.err.find("nope.crt"), std::string::npos) << missing.err;
  // The key of another certificate.
  const Refusal mismatch =
      StartFails({"--tls-cert", f.Path("sparrow.crt"), "--tls-key", f.Path("other.key")});
  EXPECT_NE(mismatch.err.find("is not the key of"), std::string::npos) << mismatch.err;
  const Refusal half = StartFails({"--tls-cert", f.Path("sparrow.crt")});
  EXPECT_NE(half.err.find("'tls_key'"), std::string::npos) << half.err;
}

}  // namespace
}  // namespace sparrow
