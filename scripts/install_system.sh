#!/usr/bin/env bash
# Best-effort system packages: real Fashion-MNIST (IDX files) and chromium for the browser test.
# Skipped quietly where apt is unavailable or we are not root; the workbench runs without them
# (digits is built in; the browser test skips with a reason).
set -u
pkgs="dataset-fashion-mnist chromium"
need=""
[ -d /usr/share/datasets/fashion-mnist ] || need="$need dataset-fashion-mnist"
command -v chromium >/dev/null 2>&1 || need="$need chromium"
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: apt-get not found; skipping system packages:$need" >&2; exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "note: not root; install these yourself for the full workbench:$need" >&2; exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
timeout 600 $SUDO apt-get update -qq >/dev/null 2>&1 || true
timeout 900 $SUDO apt-get install -y -qq $need >/dev/null 2>&1 \
  || echo "note: could not install:$need (the tests that need them will skip)" >&2
exit 0
