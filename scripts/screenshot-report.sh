#!/usr/bin/env bash
# A PNG of an HTML report as headless Chromium draws it (Debian package: chromium).
#
#   scripts/screenshot-report.sh REPORT.html OUT.png [VIEW]
#
# VIEW is the page's URL hash without '#', e.g. 'status=fail&backend=cntk' or 'op=conv2d&open=conv2d/theano'.
# WIDTH (default 1400) sets the window's width; HEIGHT the window's height (default: the whole page, measured
# first). Headless Chromium paints nothing above a page that scrolled itself (the page scrolls to the matrix when
# it opens on a view), so the default height holds the whole page and nothing needs to scroll.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 REPORT.html OUT.png [VIEW]" >&2
  exit 2
fi
report=$1 out=$2 view=${3:-}
[ -f "$report" ] || { echo "$0: no such file: $report" >&2; exit 2; }
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$browser" ] || { echo "$0: no chromium: install the Debian package 'chromium'" >&2; exit 2; }
url="file://$(realpath "$report")${view:+#$view}"
width=${WIDTH:-1400}
profile=$(mktemp -d)  # a profile of its own: two runs at once never share (and lock) one
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-extensions
       --user-data-dir="$profile")
height=${HEIGHT:-}
if [ -z "$height" ]; then
  # the script writes the page's height on <html data-height> once drawn; measured at a height where the
  # matrix box already has its largest size, so the page keeps that height in the taller window
  height=$("$browser" "${flags[@]}" --window-size="$width,2000" --virtual-time-budget=5000 --dump-dom "$url" \
             2>/dev/null | grep -o 'data-height="[0-9]*"' | head -n1 | tr -dc '0-9' || true)
  height=${height:-1000}
fi
"$browser" "${flags[@]}" --window-size="$width,$height" --virtual-time-budget=5000 --screenshot="$out" "$url" \
  >/dev/null 2>&1
[ -s "$out" ] || { echo "$0: chromium wrote no screenshot to $out" >&2; exit 1; }
echo "$out: ${width}x${height} of $url"
