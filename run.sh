#!/usr/bin/env bash
# One entry point for a fresh clone:
#   ./run.sh app [ARGS...]   set everything up, then run desktop-mem (no ARGS: the window)
#   ./run.sh test [ARGS...]  set everything up, then run the test suite (what CI runs)
#   ./run.sh lock            refresh requirements.lock (exact versions + hashes) to the latest releases
#   ./run.sh test-latest [ARGS...]
#                            run the suite against the latest releases pyproject.toml allows, in
#                            .venv-latest, ignoring the lock: finds upstream drift on purpose
set -euo pipefail
cd "$(dirname "$0")"
VENV=${DESKTOP_MEM_VENV:-.venv}
PY=${PYTHON:-python3}

need_setup() {
  [[ ! -x $VENV/bin/python ]] && return 0
  [[ ! -f $VENV/.installed ]] && return 0
  [[ pyproject.toml -nt $VENV/.installed ]] && return 0
  [[ requirements.lock -nt $VENV/.installed ]] && return 0
  return 1
}

system_libs() {
  # Qt's xcb platform needs these X client libraries; offscreen runs need none of them.
  local missing=()
  for pkg in libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-xkb1 \
             libxkbcommon-x11-0 libxcb-cursor0 libegl1 libfontconfig1 libdbus-1-3 xvfb; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if ((${#missing[@]})) && command -v apt-get >/dev/null; then
    local sudo=""; [[ $(id -u) != 0 ]] && sudo="sudo"
    echo "installing system libraries for Qt: ${missing[*]}" >&2
    $sudo apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
      || echo "warning: could not install ${missing[*]}; the window may need them" >&2
  fi
}

setup() {
  if need_setup; then
    echo "setting up $VENV (first run takes a few minutes)..." >&2
    [[ -x $VENV/bin/python ]] || "$PY" -m venv "$VENV"
    # Every package, transitive ones and the test extras included, comes from the lock at its
    # exact version and hash: an upstream release can never turn a first run red. pyproject.toml
    # keeps its ranges for people who install the package itself.
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      --require-hashes --no-deps -r requirements.lock
    # The project itself, built by the locked hatchling, with nothing resolved beyond the lock.
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      --no-deps --no-build-isolation -e .
    touch "$VENV/.installed"
  fi
}

# uv resolves the lock; it is itself pinned and lives in its own venv, outside the app's.
UV_VERSION=0.13.8
lock() {
  local tools=.venv-tools
  [[ -x $tools/bin/uv ]] && [[ $("$tools/bin/uv" --version) == "uv $UV_VERSION"* ]] || {
    [[ -x $tools/bin/python ]] || "$PY" -m venv "$tools"
    "$tools/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
  }
  # --universal: one lock for Linux, macOS and Windows (the PyInstaller builds use it too).
  "$tools/bin/uv" pip compile pyproject.toml packaging/build-requirements.in --extra test \
    --universal --python-version 3.11 --generate-hashes --upgrade --quiet -o requirements.lock
  echo "requirements.lock refreshed; run ./run.sh test, then commit it" >&2
}

latest() {
  local venv=.venv-latest
  [[ -x $venv/bin/python ]] || "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade --upgrade-strategy eager -e ".[test]"
  "$venv/bin/python" -m pip freeze --exclude-editable > "$venv/versions.txt"
  echo "testing against the latest releases (versions in $venv/versions.txt)" >&2
}

cmd=${1:-app}; shift || true
case "$cmd" in
  app)
    system_libs
    setup
    exec "$VENV/bin/desktop-mem" "$@"
    ;;
  test)
    system_libs
    setup
    export QT_QPA_PLATFORM=offscreen
    exec "$VENV/bin/python" -m pytest "$@"
    ;;
  lock)
    lock
    ;;
  test-latest)
    system_libs
    latest
    export QT_QPA_PLATFORM=offscreen
    exec .venv-latest/bin/python -m pytest "$@"
    ;;
  *)
    echo "usage: ./run.sh app [ARGS...] | ./run.sh test [PYTEST ARGS...] | ./run.sh lock | ./run.sh test-latest [PYTEST ARGS...]" >&2
    exit 2
    ;;
esac
