#!/usr/bin/env bash
# Run s3 of docs/BENCHMARKS.md (2026-12-07): issue 29's default busy polling (BusyPoll: at most two
# HTTP threads poll, and none while requests overlap) on the GPU test machine, from the repository
# root with .gpu-carry sent along (ortgpu and wrk in the bundle); about 2.5 minutes:
#   mlp_1_default.txt, mlp_1_off.txt   the tiny MLP at 1 connection as in scripts/h200_s1.sh, serve
#                                      with no flag and with --busy-poll-us 0
#   resnet_default/                    scripts/h200_serve.sh grpc with GRPC_MLP=0 and no serve flag
#
#   bash scripts/h200_s3.sh LOGDIR
set -u
L=${1:?usage: scripts/h200_s3.sh LOGDIR}
mkdir -p "$L"
source scripts/h200_s1.sh --functions "$L"
inproc before
served 1 default
served 1 off --busy-poll-us 0
step "resnet default"
GRPC_MLP=0 DURATION=8 timeout 200 bash scripts/h200_serve.sh "$L/resnet_default" grpc > /dev/null 2>&1
step end
