#!/usr/bin/env bash
# Run s2 of docs/BENCHMARKS.md (2026-12-07): issue 29's default busy polling. On the GPU test
# machine from the repository root with .gpu-carry sent along (ortgpu and wrk in the bundle);
# about 8 minutes. Two passes of, for each serve variant (no flag, --busy-poll-us 50, 200):
#   mlp_P_V.txt    the tiny MLP at 1 connection, as in scripts/h200_s1.sh (perf over HTTP and gRPC,
#                  wrk, GPU memory, the server's CPU over 10 idle seconds after the load)
#   resnet_P_V/    scripts/h200_serve.sh grpc with GRPC_MLP=0: ResNet-50 at 64 connections (the hand
#                  config) over HTTP and gRPC beside bench --io cuda-graph, the server's CPU share
#                  (off and 200 only)
#
#   bash scripts/h200_s2.sh LOGDIR
set -u
L=${1:?usage: scripts/h200_s2.sh LOGDIR}
mkdir -p "$L"
source scripts/h200_s1.sh --functions "$L"
inproc before
for pass in 1 2; do
  served $pass off
  served $pass bp50 --busy-poll-us 50
  served $pass bp200 --busy-poll-us 200
  step "resnet $pass off"
  SERVE_FLAGS="" GRPC_MLP=0 DURATION=8 timeout 200 bash scripts/h200_serve.sh "$L/resnet_${pass}_off" grpc > /dev/null 2>&1
  step "resnet $pass bp200"
  SERVE_FLAGS="--busy-poll-us 200" GRPC_MLP=0 DURATION=8 timeout 200 bash scripts/h200_serve.sh "$L/resnet_${pass}_bp200" grpc > /dev/null 2>&1
done
inproc after
step end
