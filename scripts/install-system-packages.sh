#!/usr/bin/env bash
# System libraries the backends need: OpenBLAS for Theano's BLAS calls, OpenMPI for CNTK.
# Skips apt entirely when they are already installed.
set -euo pipefail
packages=(libopenblas-dev libopenmpi3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "system packages present: ${packages[*]}"; exit 0; }
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
