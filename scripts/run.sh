#!/usr/bin/env bash
# Fresh machine -> every offline model x every bundled dataset -> leaderboard + results/*.csv,json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "st"
export HF_HUB_OFFLINE=1
exec .venv/bin/semanscope benchmark --n-jobs auto "$@"
