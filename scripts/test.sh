#!/usr/bin/env bash
# Fresh machine -> every extra + test tools (+ Debian chromium for the browser test) -> pytest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "st,viz,csc,retrieval,dist,cjk,mteb,test"
if { [ ! -x /usr/bin/chromium ] || [ ! -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ]; } \
   && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Debian chromium + fonts-noto-cjk (CJK glyphs in the browser) for the browser test ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
fi
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
