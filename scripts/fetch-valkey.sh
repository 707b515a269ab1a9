#!/usr/bin/env bash
# Fetches a valkey-server 8.x into DIR (default target/valkey) without
# installing anything: Debian's valkey-server and valkey-tools packages
# from the release's backports suite (bookworm-backports has 8.0.1),
# downloaded with apt through a private source list and list directory
# built from the machine's own Debian source (so the machine's apt
# configuration is not touched), then unpacked with dpkg-deb -x. Prints
# the binary's path on success; exits 1 (with a note on stderr) when it
# cannot be had. The tests that follow a Valkey primary
# (crates/amalgam-server/tests/resp_repl_from_valkey.rs) take it from
# AMALGAM_TEST_VALKEY_SERVER; scripts/test.sh runs this.
#
#   AMALGAM_TEST_VALKEY_SERVER=$(bash scripts/fetch-valkey.sh [DIR])
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/valkey}
bin="$dir/root/usr/bin/valkey-server"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
fail() { echo "note: no valkey-server could be fetched ($1)" >&2; exit 1; }
command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || fail "no apt-get or dpkg-deb"
# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || fail "no VERSION_CODENAME in /etc/os-release"
# The machine's Debian mirror, from its deb822 or one-line sources.
uri=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
  /etc/apt/sources.list 2>/dev/null || true)
[ -n "$uri" ] || fail "no Debian source configured"
rm -rf "$dir"
mkdir -p "$dir/lists/partial" "$dir/archives/partial"
dir=$(cd "$dir" && pwd)
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $codename-backports main" >"$dir/sources.list"
opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "Dir::Cache::Archives=$dir/archives" -o "APT::Sandbox::User=root")
apt-get "${opts[@]}" update -qq >/dev/null 2>&1 || fail "apt-get update of $codename-backports failed"
(cd "$dir" && apt-get "${opts[@]}" download -qq valkey-server valkey-tools >/dev/null 2>&1) ||
  fail "no valkey-server in $codename-backports"
for deb in "$dir"/valkey-*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
"$bin" --version >/dev/null 2>&1 || fail "the unpacked valkey-server does not run"
echo "$bin"
