#!/usr/bin/env bash
# Installs what tally needs to build and test on a fresh Debian 12 machine (run as root, or with
# sudo available). Safe to run again: it installs only what is missing. chromium: the headless
# browser that tests/integration/html_report.sh draws the HTML report in.
set -euo pipefail
need=()
# python3-dev: the Python package (python/); python3-pytest runs its tests; python3-torch is the
# PyTorch its operator capture is built against and tested with (docs/python.md)
for pkg in build-essential cmake pkg-config zlib1g-dev libsqlite3-dev clang libclang-rt-14-dev \
    python3 python3-dev python3-pytest python3-torch procps chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
