#!/usr/bin/env bash
# The wheels kbtool needs on a machine with no package index (a GPU box): kbtool's own wheel and every runtime
# dependency (pyproject.toml's [project] dependencies and theirs), for that machine's Python and platform.
# Run it here, carry DIR there, then: python3 -m pip install --no-index --find-links DIR kbtool
#
# usage: scripts/wheelhouse.sh DIR [PYTHON_VERSION] [PLATFORM]
#   PYTHON_VERSION: the other machine's `python3 -c 'import sys; print(sys.version_info[0], sys.version_info[1], sep=".")'`
#                   (default 3.12)
#   PLATFORM:       a wheel platform tag (default manylinux_2_28_x86_64: glibc 2.28 or newer, x86-64; pip also takes
#                   the older manylinux wheels it covers)
set -euo pipefail
dir=${1:?usage: scripts/wheelhouse.sh DIR [PYTHON_VERSION] [PLATFORM]}
python_version=${2:-3.12}
platform=${3:-manylinux_2_28_x86_64}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}

mapfile -t deps < <("$python" - "$root/pyproject.toml" <<'PY'
import sys
import tomllib

with open(sys.argv[1], "rb") as fh:
    print("\n".join(tomllib.load(fh)["project"]["dependencies"]))
PY
)
mkdir -p "$dir"
"$python" -m pip download --disable-pip-version-check --only-binary=:all: --dest "$dir" \
    --python-version "$python_version" --implementation cp --platform "$platform" "${deps[@]}"
"$python" -m pip wheel --disable-pip-version-check --no-deps --no-build-isolation --wheel-dir "$dir" "$root"
echo "$dir: $(ls "$dir" | wc -l) wheels for Python $python_version on $platform;" \
    "there: python3 -m pip install --no-index --find-links $dir kbtool"
