#!/usr/bin/env bash
# System libraries the backends need (OpenBLAS for Theano's BLAS calls, OpenMPI for CNTK). The names come from the
# backend recipes (`apt_packages`), via `kbtool env system-packages`, unless given as arguments; chromium too, for
# the HTML report's browser tests (tests/test_html_scoreboard.py) and scripts/screenshot-report.sh.
# Skips apt entirely when they are already installed.
set -euo pipefail
if [ $# -gt 0 ]; then
  packages=("$@")
else
  listed=$("${PYTHON:-python3}" -m kbtool env system-packages)
  mapfile -t packages <<<"$listed"
  packages+=(chromium fonts-dejavu-core)  # a font, so that a screenshot has its text
fi
missing=()
for p in "${packages[@]}"; do
  [ -n "$p" ] || continue
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "system packages present: ${packages[*]}"; exit 0; }
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
