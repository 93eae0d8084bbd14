#!/usr/bin/env bash
# Install desktop-mem for the current user: the app, its .desktop entry and icon in the XDG dirs.
#
#   packaging/install-linux.sh               use dist/desktop-mem (packaging/build.sh) if built,
#                                            else the `desktop-mem` on PATH (e.g. from pipx)
#   packaging/install-linux.sh --app DIR     install this one-folder build
#   packaging/install-linux.sh --uninstall   remove what this script installed (never the store)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
BIN_DIR="${BIN_DIR:-$HOME/.local/bin}"
APP_HOME="$DATA/desktop-mem/app"
APPS="$DATA/applications"
ICONS="$DATA/icons/hicolor"
APP_SRC=""
UNINSTALL=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --app) APP_SRC="$2"; shift 2 ;;
    --uninstall) UNINSTALL=1; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "install-linux.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

refresh_caches() {
  command -v update-desktop-database >/dev/null && update-desktop-database -q "$APPS" 2>/dev/null || true
  command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$ICONS" 2>/dev/null || true
}

if [[ $UNINSTALL == 1 ]]; then
  rm -f "$APPS/desktop-mem.desktop" "$ICONS/256x256/apps/desktop-mem.png" \
        "$ICONS/scalable/apps/desktop-mem.svg"
  if [[ -L "$BIN_DIR/desktop-mem" && "$(readlink "$BIN_DIR/desktop-mem")" == "$APP_HOME/"* ]]; then
    rm -f "$BIN_DIR/desktop-mem"
  fi
  rm -rf "$APP_HOME"
  refresh_caches
  echo "desktop-mem uninstalled (your memory store was not touched)"
  exit 0
fi

if [[ -z "$APP_SRC" && -x "$ROOT/dist/desktop-mem/desktop-mem" ]]; then
  APP_SRC="$ROOT/dist/desktop-mem"
fi
if [[ -n "$APP_SRC" ]]; then
  [[ -x "$APP_SRC/desktop-mem" ]] || { echo "install-linux.sh: no desktop-mem binary in $APP_SRC" >&2; exit 1; }
  mkdir -p "$(dirname "$APP_HOME")" "$BIN_DIR"
  rm -rf "$APP_HOME.new"
  cp -a "$APP_SRC" "$APP_HOME.new"
  rm -rf "$APP_HOME"
  mv "$APP_HOME.new" "$APP_HOME"
  ln -sfn "$APP_HOME/desktop-mem" "$BIN_DIR/desktop-mem"
  EXEC="$APP_HOME/desktop-mem"
else
  EXEC="$(command -v desktop-mem || true)"
  if [[ -z "$EXEC" ]]; then
    echo "install-linux.sh: build the app first (packaging/build.sh) or install it with" \
         "\`pipx install .\`" >&2
    exit 1
  fi
fi

DESKTOP_FILE="$ROOT/resources/desktop-mem.desktop"
[[ -f "$DESKTOP_FILE" ]] || DESKTOP_FILE="$APP_HOME/_internal/desktop_mem/_resources/desktop-mem.desktop"
mkdir -p "$APPS" "$ICONS/256x256/apps" "$ICONS/scalable/apps"
# Exec gets the absolute path: ~/.local/bin is not on every desktop session's PATH.
sed "s|^Exec=.*|Exec=\"$EXEC\"|" "$DESKTOP_FILE" > "$APPS/desktop-mem.desktop"
chmod 644 "$APPS/desktop-mem.desktop"
for icon in "$ROOT/resources/icons" "$APP_HOME/_internal/desktop_mem/_resources/icons"; do
  if [[ -f "$icon/desktop-mem.png" ]]; then
    install -m 644 "$icon/desktop-mem.png" "$ICONS/256x256/apps/desktop-mem.png"
    [[ -f "$icon/desktop-mem.svg" ]] && install -m 644 "$icon/desktop-mem.svg" "$ICONS/scalable/apps/desktop-mem.svg"
    break
  fi
done
refresh_caches
echo "installed: $EXEC"
echo "menu entry: $APPS/desktop-mem.desktop"
