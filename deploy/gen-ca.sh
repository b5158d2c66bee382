#!/usr/bin/env bash
# Makes a self-signed CA and, for each NAME, a certificate and key signed by it, for a test cluster
# over TLS (https, wss, amqps). Certificates are for IP 127.0.0.1 and DNS localhost, plus any
# address given in DDE_TLS_SAN (e.g. DDE_TLS_SAN="IP:10.0.0.5,DNS:node1").
#
# Usage: deploy/gen-ca.sh DIR [NAME...]      (default names: registry mqs activator client rabbitmq)
# Writes DIR/ca.pem (and DIR/ca.key), DIR/NAME.pem and DIR/NAME.key. An existing CA in DIR is reused.
# Needs the openssl CLI. Keys are unencrypted: for tests and trials, not for production.
set -euo pipefail

[[ $# -ge 1 && $1 != -h && $1 != --help ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
dir=$1
shift
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(registry mqs activator client rabbitmq)
days=${DDE_TLS_DAYS:-30}
san="IP:127.0.0.1,DNS:localhost${DDE_TLS_SAN:+,$DDE_TLS_SAN}"

mkdir -p "$dir"
umask 077
log="$dir/openssl.log"
run() { openssl "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "gen-ca.sh: openssl $1 failed" >&2; exit 1; }; }

if [[ ! -f $dir/ca.pem || ! -f $dir/ca.key ]]; then
  run req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$days" \
    -subj "/CN=DDE test CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
fi
ext="$dir/leaf.ext"
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' \
  "$san" >"$ext"
for name in "${names[@]}"; do
  [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { echo "gen-ca.sh: bad name \"$name\"" >&2; exit 2; }
  run req -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=dde-$name"
  run x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/$name.pem" -days "$days" -extfile "$ext"
  rm -f "$dir/$name.csr"
done
chmod 644 "$dir"/*.pem
echo "CA: $dir/ca.pem; certificates: ${names[*]/#/$dir/} (.pem and .key)"
