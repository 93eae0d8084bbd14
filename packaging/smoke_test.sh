#!/usr/bin/env bash
# Smoke test of the packaged app (not run in CI: the build takes several minutes).
# Builds with build.sh (SKIP_BUILD=1 to test an existing dist/), then runs the binary on a temporary
# store and config: --version, --help, add + search (embedder, tokenizer, chromadb inside the
# bundle), doctor, the window offscreen for a few seconds, and the Linux install script.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP_DIR="${APP_DIR:-$ROOT/dist/desktop-mem}"
BIN="$APP_DIR/desktop-mem"

if [[ "${SKIP_BUILD:-0}" != "1" ]]; then
  "$ROOT/packaging/build.sh"
fi
[[ -x "$BIN" ]] || { echo "smoke: no binary at $BIN" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Nothing of the user's own config, store or desktop is touched.
export HOME="$TMP/home" XDG_DATA_HOME="$TMP/data" XDG_CONFIG_HOME="$TMP/config"
export DESKTOP_MEM_CONFIG="$TMP/config.yaml" GIT_CONFIG_GLOBAL=/dev/null
mkdir -p "$HOME" && : > "$DESKTOP_MEM_CONFIG"
STORE="$TMP/store"
step() { echo "smoke: $*"; }

step "--version"
"$BIN" --version | grep -q "desktop-mem "
step "--help"
"$BIN" --help | grep -q "import"
step "add + search (local embeddings in the bundle)"
"$BIN" --store "$STORE" add "User lives in Berlin" >/dev/null
"$BIN" --store "$STORE" search "where does the user live" | grep -q "Berlin"
step "doctor"
"$BIN" --store "$STORE" doctor
step "export + import round trip"
"$BIN" --store "$STORE" export --format json --output "$TMP/export.json" >/dev/null
"$BIN" --store "$TMP/store2" import "$TMP/export.json" 2>/dev/null | grep -q "imported 1 conversations"

step "window, offscreen, for a few seconds"
set +e
DESKTOP_MEM_EXIT_AFTER_MS=3000 QT_QPA_PLATFORM=offscreen timeout 10 "$BIN" --store "$TMP/window-store" \
  >"$TMP/window.log" 2>&1
code=$?
set -e
# 0: the app honoured DESKTOP_MEM_EXIT_AFTER_MS; 124: it was still running when timeout stopped it.
if [[ $code -ne 0 && $code -ne 124 ]]; then
  echo "smoke: the window exited with $code:" >&2
  cat "$TMP/window.log" >&2
  exit 1
fi
WIN_STORE="$TMP/window-store"
if grep -qiE "traceback|error|usage: desktop-mem" "$TMP/window.log" || [[ ! -d "$WIN_STORE/entries" && ! -f "$WIN_STORE/memory_index.json" ]]; then
  echo "smoke: the window did not start and open its store:" >&2
  cat "$TMP/window.log" >&2
  exit 1
fi

step "install-linux.sh into a temporary XDG dir"
"$ROOT/packaging/install-linux.sh" --app "$APP_DIR" >/dev/null
test -f "$XDG_DATA_HOME/applications/desktop-mem.desktop"
test -f "$XDG_DATA_HOME/icons/hicolor/256x256/apps/desktop-mem.png"
"$HOME/.local/bin/desktop-mem" --version >/dev/null

echo "smoke: ok ($(du -sh "$APP_DIR" | cut -f1) one-folder app)"
