#!/usr/bin/env bash
# Fetches Chart.js 4.5.1 (the charting library the HTML reports inline, see
# src/report/) from the npm registry, checks the package against the
# integrity hash pinned below, and extracts the two files the build embeds:
#   $ORTGPU_CACHE/chart.js-4.5.1/{chart.umd.min.js,LICENSE.md}
# Prints the folder on stdout. Nothing is downloaded once it is cached.
#
#   scripts/fetch_chartjs.sh            # download once, reuse the cache after
#   CHARTJS_ROOT=/path ...              # a folder with those two files: checked, not downloaded
set -euo pipefail
CHARTJS_VERSION=4.5.1
CHARTJS_INTEGRITY="sha512-GIjfiT9dbmHRiYi6Nl2yFCq7kkwdkp1W/lp2J99rX0yo9tgJGn3lKQATztIjb5tVtevcBtIdICNWqlq5+E8/Pw=="
FILES=(chart.umd.min.js LICENSE.md)
cache=${ORTGPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu}
say() { echo "fetch_chartjs: $*" >&2; }

if [ -n "${CHARTJS_ROOT:-}" ]; then
  for f in "${FILES[@]}"; do
    [ -e "$CHARTJS_ROOT/$f" ] || { say "CHARTJS_ROOT=$CHARTJS_ROOT has no $f; it needs ${FILES[*]}"; exit 1; }
  done
  echo "$CHARTJS_ROOT"; exit 0
fi

root="$cache/chart.js-$CHARTJS_VERSION"
if [ -f "$root/.complete" ]; then echo "$root"; exit 0; fi
tgz=$("$(dirname "$0")/npm_fetch.sh" "chart.js@$CHARTJS_VERSION" "$CHARTJS_INTEGRITY")
stage=$(mktemp -d "$cache/.stage.XXXX")
trap 'rm -rf "$stage"' EXIT
tar --no-same-owner -xzf "$tgz" -C "$stage" package/dist/chart.umd.min.js package/LICENSE.md
mv "$stage/package/dist/chart.umd.min.js" "$stage/package/LICENSE.md" "$stage/"
echo "$CHARTJS_VERSION" > "$stage/VERSION"
chmod 755 "$stage"; rm -rf "$stage/package" "$root"
mv "$stage" "$root"; trap - EXIT
touch "$root/.complete"
say "Chart.js $CHARTJS_VERSION ready in $root"
echo "$root"
