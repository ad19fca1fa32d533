#!/usr/bin/env bash
# Run the three benchmarks with their default settings; results go to $WORK (default bench/out/):
#   harness_overhead.{json,md}  anchor_workload.{json,md}  load_256k.{json,md}  summary.md
#
# Needs ../shared/tools (make_memlens_like.py, stub_server.py) next to the repository root,
# aiohttp and Pillow in the interpreter, /usr/bin/time (optional), ~1.1 GB of disk under $WORK
# (the 786 MB 256K-like file, the image pools, a 260 MB tiny-image file) and about 6 minutes
# on 2 cores.
#
# Knobs (environment): PYTHON (default .venv/bin/python, else python3), WORK (default
# bench/out), QUICK=1 (fewer repeats, no TokenCounter pass over the 256K file, which alone
# takes ~2.5 min here), COUNT_TOKENS=1 (also run the anchor workload with --count-tokens),
# WAIT_QUIET=S (before each measurement wait up to S s for the machine to be idle; default 60;
# the "other load %" column shows how much CPU other processes took during each measurement).
set -euo pipefail

BENCH="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$BENCH/.." && pwd)"
cd "$REPO"
if [[ -z "${PYTHON:-}" ]]; then
  PYTHON=python3
  [[ -x "$REPO/.venv/bin/python" ]] && PYTHON="$REPO/.venv/bin/python"
fi
WORK="${WORK:-$BENCH/out}"
WQ=(--wait-quiet "${WAIT_QUIET:-60}")
mkdir -p "$WORK"
LOG="$WORK/run_all.log"
: >"$LOG"

run() {
  echo "+ $*" | tee -a "$LOG"
  "$@" 2>&1 | tee -a "$LOG"
}

if [[ "${QUICK:-0}" == 1 ]]; then
  run "$PYTHON" "$BENCH/harness_overhead.py" --work "$WORK" "${WQ[@]}"
  run "$PYTHON" "$BENCH/anchor_workload.py" --work "$WORK" "${WQ[@]}"
  run "$PYTHON" "$BENCH/load_256k.py" --work "$WORK" "${WQ[@]}" --repeats 1 --skip-counter
else
  run "$PYTHON" "$BENCH/harness_overhead.py" --work "$WORK" "${WQ[@]}" --repeats 2
  run "$PYTHON" "$BENCH/anchor_workload.py" --work "$WORK" "${WQ[@]}" --repeats 2
  run "$PYTHON" "$BENCH/load_256k.py" --work "$WORK" "${WQ[@]}" --repeats 3
fi
if [[ "${COUNT_TOKENS:-0}" == 1 ]]; then
  run "$PYTHON" "$BENCH/anchor_workload.py" --work "$WORK" "${WQ[@]}" --concurrency 32 \
      --extra=--count-tokens --name anchor_workload_count_tokens
fi

{
  echo "# bench summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs)"
  echo
  names="harness_overhead anchor_workload load_256k"
  [[ "${COUNT_TOKENS:-0}" == 1 ]] && names="$names anchor_workload_count_tokens"
  for f in $names; do
    [[ -f "$WORK/$f.md" ]] && { cat "$WORK/$f.md"; echo; }
  done
} >"$WORK/summary.md"
echo "summary: $WORK/summary.md"
