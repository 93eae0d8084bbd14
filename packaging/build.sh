#!/usr/bin/env bash
# Build the one-folder app with PyInstaller: dist/desktop-mem/desktop-mem (+ its libraries).
# Usage: packaging/build.sh            (VENV=path to use another virtualenv)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
DIST="${DIST:-$ROOT/dist}"
WORK="${WORK:-$ROOT/build/pyinstaller}"

if [[ ! -x "$PY" ]]; then
  echo "build.sh: no Python at $PY; run ./run.sh once (or set VENV=...)" >&2
  exit 1
fi
# The build uses the same lock as run.sh and CI: every package, PyInstaller included (it is in
# packaging/build-requirements.in, not an app dependency), at its exact locked version and hash.
"$PY" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
  -r "$ROOT/requirements.lock"

cd "$ROOT"
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$DIST" --workpath "$WORK" packaging/desktop-mem.spec

APP="$DIST/desktop-mem"
echo "built: $APP/desktop-mem"
echo "size:  $(du -sh "$APP" | cut -f1)"
