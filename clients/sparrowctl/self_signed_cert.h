#pragma once
// A self-signed TLS certificate for one device (`sparrowctl cert`): an ECDSA P-256 key and an
// X.509 v3 certificate whose subjectAltName lists the names and addresses clients will dial.
// The certificate is a leaf (CA:FALSE: it can sign nothing) that verifies against itself:
// clients pin it with --ca, which trusts this one certificate only. Thread-safe.
#include <string>
#include <vector>

namespace sparrow::ctl {

struct CertRequest {
  std::string common_name = "sparrowd";
  std::vector<std::string> dns_names;  // always with "localhost"
  std::vector<std::string> ips;        // always with 127.0.0.1 and ::1
  int days = 825;                      // what browsers accept for a server certificate
};

struct CertPem {
  std::string certificate;  // "-----BEGIN CERTIFICATE-----..."
  std::string private_key;  // PKCS#8 "-----BEGIN PRIVATE KEY-----..."
};

// False with *error (naming the bad name or address) when the request cannot be made.
bool MakeSelfSignedCert(const CertRequest& request, CertPem* out, std::string* error);

// This machine's host name and the addresses of its interfaces that are up (not loopback):
// what a laptop on the LAN would use to reach it.
std::string LocalHostName();
std::vector<std::string> LocalAddresses();

}  // namespace sparrow::ctl
