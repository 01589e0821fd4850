#include "clients/sparrowctl/self_signed_cert.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace sparrow::ctl {
namespace {

template <auto Free>
struct Deleter {
  template <class T>
  void operator()(T* p) const {
    Free(p);
  }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

std::string OpenSslError(const std::string& what) {
  char buf[256] = "unknown error";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return what + ": " + buf;
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

bool AddExtension(X509* cert, int nid, const std::string& value, std::string* error) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    *error = OpenSslError("certificate extension '" + value + "'");
    return false;
  }
  return true;
}

bool ValidDnsName(const std::string& n) {
  if (n.empty() || n.size() > 253) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '*';
  });
}

bool ValidIp(const std::string& ip) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, ip.c_str(), buf) == 1 || inet_pton(AF_INET6, ip.c_str(), buf) == 1;
}

void AddUnique(std::vector<std::string>* list, const std::string& v) {
  if (std::find(list->begin(), list->end(), v) == list->end()) list->push_back(v);
}

}  // namespace

bool MakeSelfSignedCert(const CertRequest& request, CertPem* out, std::string* error) {
  std::vector<std::string> dns = {"localhost"}, ips = {"127.0.0.1", "::1"};
  for (const auto& n : request.dns_names) {
    if (!ValidDnsName(n)) {
      *error = "'" + n + "' is not a host name (letters, digits, '-' and '.')";
      return false;
    }
    AddUnique(&dns, n);
  }
  for (const auto& ip : request.ips) {
    if (!ValidIp(ip)) {
      *error = "'" + ip + "' is not an IPv4 or IPv6 address";
      return false;
    }
    AddUnique(&ips, ip);
  }
  if (request.days < 1 || request.days > 3650) {
    *error = "days must be between 1 and 3650, got " + std::to_string(request.days);
    return false;
  }
  KeyPtr key(EVP_EC_gen("P-256"));
  CertPtr cert(X509_new());
  if (!key || !cert) {
    *error = OpenSslError("cannot make a P-256 key");
    return false;
  }
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) {
    *error = OpenSslError("no random serial number");
    return false;
  }
  serial[0] &= 0x7f;  // a positive INTEGER
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clocks on small boards drift
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), long{request.days} * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("Sparrow"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(request.common_name.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  std::string san;
  for (const auto& d : dns) {
    if (!san.empty()) san += ',';
    san.append("DNS:").append(d);
  }
  for (const auto& ip : ips) san.append(",IP:").append(ip);
  // A leaf, not an authority: trusting it (pinning it with --ca, or in a browser for this
  // server) trusts this certificate only, never one it could sign. Self-signed leaves verify
  // against themselves. clientAuth: a coordinator presents it to its workers (mutual TLS).
  if (!AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE", error) ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature", error) ||
      !AddExtension(cert.get(), NID_ext_key_usage, "serverAuth,clientAuth", error) ||
      !AddExtension(cert.get(), NID_subject_key_identifier, "hash", error) ||
      !AddExtension(cert.get(), NID_subject_alt_name, san, error)) {
    return false;
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    *error = OpenSslError("cannot sign the certificate");
    return false;
  }
  BioPtr cert_bio(BIO_new(BIO_s_mem())), key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    *error = OpenSslError("cannot write PEM");
    return false;
  }
  out->certificate = BioText(cert_bio.get());
  out->private_key = BioText(key_bio.get());
  return true;
}

std::string LocalHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_UP) == 0 ||
        (a->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr)) continue;  // needs a zone; not dialled by IP
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    AddUnique(&out, text);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace sparrow::ctl
