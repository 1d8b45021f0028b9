#!/usr/bin/env bash
# Debian's chromium for the admin page's browser tests (Playwright drives /usr/bin/chromium;
# no browser is downloaded). `make chromium`; exits non-zero when it cannot be installed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/clients/apt.sh"
apt_ensure chromium chromium fonts-dejavu-core
test -x /usr/bin/chromium
