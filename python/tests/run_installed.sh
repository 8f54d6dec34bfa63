#!/usr/bin/env bash
# CTest's python_package: installs the package as a user would (pip, offline, Debian's build tools,
# into a virtual environment) from the configured build tree BUILD, then runs the pytest suite
# against that installed copy (not the source tree's files).
#   run_installed.sh PYTHON REPO BUILD [pytest args...]
set -euo pipefail
python=$1 repo=$2 build=$3
shift 3
"$python" -c "import pytest, numpy" 2>/dev/null || {
  echo "python_package: skipped: $python lacks pytest or numpy (apt-get install python3-pytest python3-numpy)"
  exit 77
}
venv="$build/python/venv"
[ -x "$venv/bin/python" ] || "$python" -m venv --system-site-packages "$venv"
# WGC_BUILD_DIR: pip builds the extension in this configured tree instead of a fresh one.
WGC_BUILD_DIR="$build" "$venv/bin/pip" install --quiet --no-build-isolation --no-index --force-reinstall \
  --no-deps "$repo/python"
"$venv/bin/python" -c "import numpy" # the dependency pip was told not to fetch
run="$build/python/pytest-run"
mkdir -p "$run" && cd "$run" # not a folder that holds a wgc package of its own
"$venv/bin/python" -c "import wgc, sys; print('python_package: testing', wgc.__file__); sys.exit(not wgc.__file__.startswith('$venv'))"
export WGC_FIXTURES=${WGC_FIXTURES:-$(cd "$repo/.." && pwd)/shared/fixtures}
export WGC_DEPS=${WGC_DEPS:-$repo/.deps}
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/python/tests" "$@"
