#!/usr/bin/env bash
# Run q1 (2026-12-06): issue 28's tune and replay for ResNet-50, issue 30's A/B against the build
# before several-GPU serving, issue 28's tune and replay for BERT-base, then issue 27's three
# models on one GPU with perf's saturation verdict, as one detached job on one warm machine, so
# that it outlasts a device call's 10 minutes. From the repository root with .gpu-carry sent along:
#
#   setsid nohup bash scripts/h200_q1.sh /tmp/L > /tmp/L.log 2>&1 < /dev/null &
#
# with the old build bundled as `ortgpu-old` (make-carry --bundle build/ortgpu OLD/ortgpu-old; or,
# where it does not fit one call's carry, copy .oldbin/ortgpu-old.xz to /tmp/ortgpu-old.xz in a
# later call on the same machine), then collect /tmp/L in the calls after it. The scripts are
# copied to /tmp/q1 first: a later call re-sends the tree under a running bash.
set -u
L=${1:?usage: scripts/h200_q1.sh LOGDIR}
mkdir -p "$L" /tmp/q1
cp scripts/h200_tune.sh scripts/h200_issue30_ab.sh scripts/h200_serve_lib.sh scripts/h200_issue27.sh /tmp/q1/
echo "start $(date -u +%T)" > "$L/q1.txt"
TUNE_MINUTES=${TUNE_MINUTES:-5} bash /tmp/q1/h200_tune.sh "$L/tune" resnet
bash /tmp/q1/h200_tune.sh "$L/tune" replay-resnet
echo "resnet done $(date -u +%T)" >> "$L/q1.txt"
for _ in $(seq 1 120); do [ -x /tmp/ortgpu-gpu/bin/ortgpu-old ] || [ -f /tmp/ortgpu-old.xz ] && break; sleep 5; done
if [ -x /tmp/ortgpu-gpu/bin/ortgpu-old ] || [ -f /tmp/ortgpu-old.xz ]; then
  sed -i -e 's#source scripts/h200_serve_lib.sh#source /tmp/q1/h200_serve_lib.sh#' \
      -e 's#\.oldbin/ortgpu-old\.xz#/tmp/ortgpu-old.xz#g' /tmp/q1/h200_issue30_ab.sh
  PASSES=${PASSES:-2} bash /tmp/q1/h200_issue30_ab.sh "$L/ab"
fi
echo "ab done $(date -u +%T)" >> "$L/q1.txt"
TUNE_MINUTES=${TUNE_MINUTES:-5} bash /tmp/q1/h200_tune.sh "$L/tune" bert
bash /tmp/q1/h200_tune.sh "$L/tune" replay-bert
echo "bert done $(date -u +%T)" >> "$L/q1.txt"
PARTS=three bash /tmp/q1/h200_issue27.sh "$L/i27"
echo "done $(date -u +%T)" >> "$L/q1.txt"
