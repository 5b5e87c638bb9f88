#!/usr/bin/env bash
# Make sure the kennel image exists: Docker engine + local base image
# (.ci/docker.sh), then `python kennel/build.py` (builds only when the
# fetch-kennel:<hash> tag is missing). Idempotent; a warm run takes < 1 s.
# Prints the image tag on stdout; everything else goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
t0=$EPOCHREALTIME
bash "$here/docker.sh" >&2
PY="${PYTHON:-$(command -v python3 || command -v python)}"
"$PY" "$repo/kennel/build.py" "$@"
awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "[kennel-image.sh] done in %.2f s\n", b - a }' >&2
