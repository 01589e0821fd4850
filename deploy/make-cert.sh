#!/usr/bin/env bash
# Makes a self-signed TLS certificate for sparrowd on this device with the openssl command (the
# same kind `sparrowctl cert` makes, for devices without sparrowctl: a leaf, CA:FALSE, so that
# trusting it trusts nothing it could sign):
#   deploy/make-cert.sh [DIR] [EXTRA_NAME_OR_IP ...]
# writes DIR/sparrow.crt and DIR/sparrow.key (mode 0600), valid for localhost, this host's name,
# its addresses and the extra names given. Then:
#   sparrowd --host 0.0.0.0 --tls-cert DIR/sparrow.crt --tls-key DIR/sparrow.key ...
# and on the laptop, with a copy of sparrow.crt:
#   sparrowctl --host <address> --ca sparrow.crt status
#   curl --cacert sparrow.crt https://<address>:8080/health
set -euo pipefail
dir="${1:-.}"
shift || true
san="DNS:localhost,DNS:$(hostname),IP:127.0.0.1,IP:::1"
for ip in $(hostname -I 2>/dev/null); do
  case "$ip" in fe80:*) ;; *) san+=",IP:$ip" ;; esac  # link-local needs a zone; nobody dials it
done
for extra in "$@"; do
  if [[ "$extra" =~ ^[0-9.]+$ || "$extra" == *:* ]]; then san+=",IP:$extra"; else san+=",DNS:$extra"; fi
done
mkdir -p "$dir"
(umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
  -days 825 -subj "/O=Sparrow/CN=sparrowd" -addext "subjectAltName=$san" \
  -addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=critical,digitalSignature" \
  -addext "extendedKeyUsage=serverAuth,clientAuth" \
  -keyout "$dir/sparrow.key" -out "$dir/sparrow.crt" 2>/dev/null)
chmod 644 "$dir/sparrow.crt"
echo "wrote $dir/sparrow.crt and $dir/sparrow.key for $san"
