#!/usr/bin/env bash
# Debian packages the benchmarks and report tests need: WordNet 3.0 (with SemCor sense counts)
# headless Chromium, and util-linux (setpriv: the embedded PostgreSQL runs as nobody when we are
# root). Installs only what is missing; needs root or sudo.
set -euo pipefail
pkgs=(wordnet-base wordnet-sense-index chromium util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing system packages ${missing[*]} and no apt-get; install them by hand" >&2
  exit 2
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
