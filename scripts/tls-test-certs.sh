#!/usr/bin/env bash
# Makes TEST-ONLY certificates for the TLS tests and benchmarks into DIR
# (nothing here is ever committed: every run makes fresh keys):
#   ca.crt/ca.key            a test CA
#   server.crt/server.key    the server (127.0.0.1, localhost), signed by the CA
#   server2.crt/server2.key  a second server certificate (reload tests), CN amalgam-reloaded
#   client.crt/client.key    a client certificate signed by the CA
#   expired.crt/expired.key  a client certificate signed by the CA, expired
#   rogue.crt/rogue.key      a self-signed certificate no one trusts
# Usage: scripts/tls-test-certs.sh DIR
set -euo pipefail
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
cd "$dir"
q() { "$@" >/dev/null 2>&1 || { echo "tls-test-certs: failed: $*" >&2; "$@"; exit 1; }; }
q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=Amalgam Test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
san="subjectAltName=IP:127.0.0.1,DNS:localhost"
sign() { # name cn days|expired extfile-line
  local name=$1 cn=$2 ext=$3
  q openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$cn"
  printf '%s\n' "$ext" >"$name.ext"
  if [ "${4:-}" = expired ]; then
    # Valid for one day, ten days ago: openssl x509 cannot back-date, so
    # the CA signs with openssl ca's explicit dates.
    mkdir -p ca.db && : >ca.db/index && echo 01 >ca.db/serial
    cat >ca.db/ca.cnf <<CNF
[ca]
default_ca=c
[c]
database=ca.db/index
new_certs_dir=ca.db
serial=ca.db/serial
default_md=sha256
policy=p
unique_subject=no
[p]
commonName=supplied
CNF
    q openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -in "$name.csr" -out "$name.crt" \
      -startdate 20200101000000Z -enddate 20200102000000Z -extfile "$name.ext" -notext
  else
    q openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 2 \
      -extfile "$name.ext"
  fi
  rm -f "$name.csr" "$name.ext"
}
sign server 127.0.0.1 "$san"
sign server2 amalgam-reloaded "$san"
sign client amalgam-client "extendedKeyUsage=clientAuth"
sign expired amalgam-expired "extendedKeyUsage=clientAuth" expired
q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout rogue.key -out rogue.crt -days 2 -subj "/CN=rogue" -addext "$san"
rm -rf ca.db ca.srl
