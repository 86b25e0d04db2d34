#!/usr/bin/env bash
# Run a1 (issues 28, 29; written 2026-12-08, when no device was lent: the next session's first run) on the GPU test machine, from the repository root with
# .gpu-carry sent along; about 19 minutes (24 with GRID2=1), so start it detached (setsid) and collect LOGDIR/*.tgz in
# later calls (one archive per part, written as each part ends). Parts, in this order:
#   tune/    issue 28: TUNE_MINUTES=3 scripts/h200_tune.sh bert, then replay-bert (the GPU's clocks,
#            power and temperature logged each second: smi_*.csv)
#   s3/      issue 29: scripts/h200_s3.sh (the tiny MLP at 1 connection, default flags and busy
#            polling off; ResNet-50 at 64 connections over HTTP and gRPC against in process)
#   grid1/   issue 28: TUNE_MINUTES=5 scripts/h200_tune.sh grid-bert on tune/'s history (grid2/: again,
#            continuing it, with GRID2=1)
#
#   setsid bash scripts/h200_a1.sh LOGDIR > /dev/null 2>&1 < /dev/null &
set -u
TOP=${1:?usage: scripts/h200_a1.sh LOGDIR}
mkdir -p "$TOP"
pack() { tar czf "$TOP/$1.tgz" -C "$TOP" "$1"; echo "== $(date -u +%T) packed $1" >> "$TOP/steps.txt"; }
echo "== $(date -u +%T) start" >> "$TOP/steps.txt"
nvidia-smi > "$TOP/nvidia-smi.txt" 2>&1
TUNE_MINUTES=3 bash scripts/h200_tune.sh "$TOP/tune" bert
bash scripts/h200_tune.sh "$TOP/tune" replay-bert
pack tune
bash scripts/h200_s3.sh "$TOP/s3"
pack s3
TUNE_MINUTES=5 bash scripts/h200_tune.sh "$TOP/grid1" grid-bert
cp /tmp/tune/bert/tune_history.jsonl "$TOP/grid1/history_after.jsonl" 2>/dev/null
pack grid1
if [ "${GRID2:-0}" = 1 ]; then
  TUNE_MINUTES=5 bash scripts/h200_tune.sh "$TOP/grid2" grid-bert
  cp /tmp/tune/bert/tune_history.jsonl "$TOP/grid2/history_after.jsonl" 2>/dev/null
  pack grid2
fi
echo "== $(date -u +%T) end" >> "$TOP/steps.txt"
