#!/usr/bin/env bash
# The report test opens report.html in headless Chromium. Install Debian's chromium when it
# is missing and we can (root with apt-get, as on CI); otherwise that one test is skipped.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the report test (apt-get)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
    >/tmp/coevo-chromium-install.log 2>&1 || echo "chromium install failed: see /tmp/coevo-chromium-install.log"
else
  echo "chromium not found and cannot be installed here: the browser test will be skipped"
fi
exit 0
