#!/usr/bin/env bash
# One entry point for a fresh clone:
#   ./run.sh app [ARGS...]   set everything up, then run desktop-mem (no ARGS: the window)
#   ./run.sh test [ARGS...]  set everything up, then run the test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")"
VENV=${DESKTOP_MEM_VENV:-.venv}
PY=${PYTHON:-python3}

need_setup() {
  [[ ! -x $VENV/bin/python ]] && return 0
  [[ ! -f $VENV/.installed ]] && return 0
  [[ pyproject.toml -nt $VENV/.installed ]] && return 0
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
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e ".[test]"
    touch "$VENV/.installed"
  fi
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
  *)
    echo "usage: ./run.sh app [ARGS...] | ./run.sh test [PYTEST ARGS...]" >&2
    exit 2
    ;;
esac
