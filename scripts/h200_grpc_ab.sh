#!/usr/bin/env bash
# Two ortgpu builds side by side over gRPC on the GPU test machine
# (docs/BENCHMARKS.md), from the repository root after
# `source .gpu-carry/stage.sh`: the grpc part of h200_serve.sh in passes that
# alternate between the ortgpu on PATH ("new") and BASE, so both builds see
# the same machine at nearly the same time (on these machines a figure moves
# between server starts as much as between builds).
#
#   scripts/h200_grpc_ab.sh OUTDIR BASE [MLP_PASSES] [RESNET_PASSES]
#
# BASE is another ortgpu binary, or env:NAME=VALUE for this build run with
# that variable set (e.g. env:GLIBC_TUNABLES=glibc.malloc.perturb=0 leaves
# glibc's malloc as it is by default, src/sys/host_allocator.h).
#
# MLP passes: in process (bench), then one server with the low-latency flags
# (--http-threads 1 --grpc-poller-threads 1 --busy-poll-us 300), perf over HTTP and
# gRPC at concurrency 1 (the new build also with perf --busy-poll). ResNet-50
# passes: bench --io cuda-graph (batch 32), then the best served config with
# 64 connections. Every pass's output is appended to OUTDIR/mlp.txt or
# OUTDIR/resnet.txt under a "##### build pass" line.
set -u
out=${1:?usage: h200_grpc_ab.sh OUTDIR BASE [MLP_PASSES] [RESNET_PASSES]}
base=${2:?the other ortgpu binary}
mlp_passes=${3:-2}
resnet_passes=${4:-2}
mkdir -p "$out" /tmp/ab-base
base_env=()
if [[ $base == env:* ]]; then
  base_env=("${base#env:}")
  ln -sf "$(command -v ortgpu)" /tmp/ab-base/ortgpu
else
  ln -sf "$(realpath "$base")" /tmp/ab-base/ortgpu
fi
low="--http-threads 1 --grpc-poller-threads 1 --busy-poll-us 300"

# run BUILD PART N: one pass of h200_serve.sh grpc
run() {
  local dir=/tmp/ab-$1-$2-$3 path=$PATH perf_flags=";--busy-poll" env=()
  if [ "$1" = base ]; then
    path=/tmp/ab-base:$PATH env=(${base_env[@]+"${base_env[@]}"})
    [ ${#env[@]} = 0 ] && perf_flags=""   # another binary: perf --busy-poll may be unknown to it
  fi
  if [ "$2" = mlp ]; then
    env ${env[@]+"${env[@]}"} PATH=$path GRPC_RESNET=0 MLP_SERVE_FLAGS="$low" MLP_PERF_FLAGS="$perf_flags" scripts/h200_serve.sh "$dir" grpc >/dev/null
  else
    env ${env[@]+"${env[@]}"} PATH=$path GRPC_MLP=0 scripts/h200_serve.sh "$dir" grpc >/dev/null
  fi
  { echo "##### $1 pass $3"; cat "$dir/grpc.txt"; } >> "$out/$2.txt"
}

for i in $(seq "$mlp_passes"); do run new mlp "$i"; run base mlp "$i"; done
for i in $(seq "$resnet_passes"); do run new resnet "$i"; run base resnet "$i"; done
