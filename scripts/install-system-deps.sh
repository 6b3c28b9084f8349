#!/usr/bin/env bash
# Debian packages the benchmarks and report tests need: WordNet 3.0 (with SemCor sense counts),
# Chromium's headless shell (what the browser tests drive), and util-linux (setpriv: the embedded
# PostgreSQL runs as its own system user when contextlens runs as root). Installs only what is
# missing; needs root or sudo.
# Then the system user contextlens-pg that runs the embedded PostgreSQL when contextlens runs as
# root (no home, no login shell); made once, whether or not packages were missing.
set -euo pipefail
PG_USER=contextlens-pg
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

pg_user() {
  id -u "$PG_USER" >/dev/null 2>&1 && return 0
  if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
    echo "note: no system user $PG_USER (needed only to run contextlens as root); as root: bash $0" >&2
    return 0
  fi
  echo "creating the system user $PG_USER (runs the embedded PostgreSQL when contextlens runs as root)"
  $SUDO useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER"
}

pkgs=(wordnet-base wordnet-sense-index chromium-headless-shell util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  pg_user
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing system packages ${missing[*]} and no apt-get; install them by hand" >&2
  exit 2
fi
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
pg_user
