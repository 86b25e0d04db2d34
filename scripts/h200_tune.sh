#!/usr/bin/env bash
# Issue 28's targets on the H200 test machine, from the repository root with .gpu-carry sent along
# (docs/TUNE.md, "Measuring the targets"): `ortgpu tune` on ResNet-50 and BERT-base (budget 20 ms
# p99, 64 connections over HTTP), each under `timeout 600` (the target: <= 10 minutes per model,
# precision included); the grid for the record (tune --exhaustive: the winner's share of the grid's
# best, the target >= 95%); the winner served again from a fresh start (the target: its goodput
# within 5%). Logs under LOGDIR.
#
#   scripts/h200_tune.sh LOGDIR PART
#
# PART (each runs alone, one device call of at most 10 minutes each):
#   resnet | bert              tune the model: LOGDIR/tune_<model>.txt, its history and config.pbtxt
#   grid-resnet | grid-bert    tune --exhaustive with the same history: the search is reused and
#                              not continued (--max-served: what the history served), the grid
#                              measured (about 24 points at ~25-55 s); a part stopped by its
#                              time limit says "incomplete": run it again and it continues
#   replay-resnet | replay-bert  the written config served by a fresh `ortgpu serve`: perf's
#                              budget search (20 ms p99, up to 64 connections) three times, their
#                              mean (tune's figure is a mean of three too), and perf at 64
#                              connections against in process, beside tune's own figure; after
#                              each search the GPU's state (nvidia-smi -q) and one connection
#                              against the same batch in process
# Each part also logs the GPU's clocks, power and temperature every second: LOGDIR/smi_PART.csv.
# TUNE_MINUTES (default 9) sets tune's --max-minutes, so a tune and its replay fit one call.
# The tune parts keep their output in /tmp/tune/<model> (the history lives there): run `resnet`
# before `grid-resnet` and `replay-resnet` in the same machine session, or carry that folder.
set -u
L=${1:?usage: scripts/h200_tune.sh LOGDIR resnet|bert|grid-resnet|grid-bert|replay-resnet|replay-bert}
PART=${2:?usage: scripts/h200_tune.sh LOGDIR resnet|bert|grid-resnet|grid-bert|replay-resnet|replay-bert}
mkdir -p "$L"
source .gpu-carry/stage.sh
M=/tmp/models; mkdir -p $M
[ -f $M/resnet50.onnx ] && [ -f $M/bert.onnx ] || python3 .gpu-carry/export_models.py $M bert resnet50 > "$L/export.txt" 2>&1
step() { echo "== $(date -u +%T) $*" >> "$L/steps.txt"; }
# The GPU's clocks, power and temperature every second while the part runs (LOGDIR/smi_PART.csv): run
# z1's replay served BERT-base 10% slower per batch on its third search than on its first, at one
# connection as at 64, and the log says whether the GPU's clocks fell or the server did.
SMI_Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$SMI_Q,clocks_event_reasons.active --format=csv -c 1 > /dev/null 2>&1 && SMI_Q=$SMI_Q,clocks_event_reasons.active
nvidia-smi --query-gpu=$SMI_Q --format=csv -l 1 > "$L/smi_$PART.csv" 2>&1 & SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

MODEL=${PART#*-}
case "$MODEL" in
  resnet) NAME=resnet50; FILE=$M/resnet50.onnx; INPUTS=(); PERF_INPUTS=(); WARMUP=() ;;
  bert)
    NAME=bert; FILE=$M/bert.onnx
    INPUTS=(--shape seq:128 --int-range input_ids:0:30000)
    PERF_INPUTS=(--shape input_ids:1x128 --shape attention_mask:1x128 --shape token_type_ids:1x128
                 --int-range input_ids:0:30000)
    WARMUP=(--warmup-shape input_ids:1x128 --warmup-shape attention_mask:1x128 --warmup-shape token_type_ids:1x128) ;;
  *) echo "unknown part $PART" >&2; exit 2 ;;
esac
OUT=/tmp/tune/$NAME

tune() {  # $1: log name; the rest: extra flags
  local log=$1; shift
  step "$log"
  { /usr/bin/time -f "wall %e s" timeout $(( ${TUNE_MINUTES:-9} * 60 + 60 )) ortgpu tune "$FILE" --latency-budget-ms 20 \
      --output "$OUT" --max-minutes ${TUNE_MINUTES:-9} ${INPUTS[@]+"${INPUTS[@]}"} "$@"; echo "rc=$?"; } > "$L/$log.txt" 2>&1
  cp "$OUT/tune_history.jsonl" "$L/${log}_history.jsonl" 2>/dev/null
  cp "$OUT/config.pbtxt" "$L/${log}_config.pbtxt" 2>/dev/null
  grep -E "^(winner|winner's goodput|why|grid best|tune's winner|grid \()|^wall|^rc=" "$L/$log.txt" | sed "s/^/$log: /" >> "$L/summary.txt"
}

case "$PART" in
  resnet|bert) tune "tune_$NAME" ;;
  grid-*)
    # The search stops at what the history already served (--max-served), so the grid is compared
    # with the tune's own winner and its time goes to the grid's points (run q2: a grid run that
    # also continued the search measured 10 of 24 points in 14 minutes).
    served=$(python3 - "$OUT/tune_history.jsonl" <<'PY'
import json, sys
keys = set()
try:
    for line in open(sys.argv[1]):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if str(j.get("key", "")).startswith("served "):
            keys.add(j["key"])
except OSError:
    pass
print(len(keys))
PY
)
    [ "${served:-0}" -gt 0 ] || { echo "no served candidate in $OUT/tune_history.jsonl: run the $MODEL part first" >&2; exit 1; }
    tune "grid_$NAME" --exhaustive --max-served "$served" ;;
  replay-*)
    [ -f "$OUT/config.pbtxt" ] || { echo "no $OUT/config.pbtxt: run the $MODEL part first" >&2; exit 1; }
    step "replay $NAME"
    R=/tmp/replay; rm -rf $R; mkdir -p $R/$NAME/1
    cp "$OUT/config.pbtxt" $R/$NAME/; ln -sf "$FILE" $R/$NAME/1/model.onnx
    export LD_LIBRARY_PATH=/tmp/ortgpu-gpu/lib:${LD_LIBRARY_PATH:-}
    start=$(date +%s%N)
    ortgpu serve --model-repository $R --http-port 8000 --metrics-port 8002 ${WARMUP[@]+"${WARMUP[@]}"} > "$L/replay_${NAME}_serve.log" 2>&1 & pid=$!
    for _ in $(seq 1 3000); do
      python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/v2/health/ready")' 2>/dev/null && break
      sleep 0.2
    done
    echo "load: $(( ($(date +%s%N) - start) / 1000000 )) ms" > "$L/replay_${NAME}.txt"
    P=(ortgpu perf --url http://127.0.0.1:8000 --model $NAME --threads 4 ${PERF_INPUTS[@]+"${PERF_INPUTS[@]}"})
    # Three budget searches on this start, as tune repeats its leader's (its figure is the mean of
    # three): the replay's mean is compared with tune's mean.
    { for pass in 1 2 3; do
        echo "== perf's budget search (20 ms p99, up to 64 connections), pass $pass"
        timeout 200 "${P[@]}" --latency-budget-ms 20 --max-concurrency 64 --measurement-interval 1500 --max-trials 4
        # The GPU's state as the pass ends: its clocks, what throttles them, temperature and power.
        nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE,POWER > "$L/smi_q_${NAME}_pass$pass.txt" 2>&1
        # One connection against the same batch in process, now: if the server's time per batch
        # grew and in process did not, the server slowed; if both grew, the GPU did.
        echo "== one connection against in process after pass $pass"
        timeout 90 "${P[@]}" --concurrency 1 --measurement-interval 2000 --max-trials 3 --compare-in-process "$FILE"
      done
      echo "== mean of the budget searches: $(grep -oE 'best concurrency [0-9]+: [0-9.]+ infer/s, [0-9.]+ items/s' "$L/replay_${NAME}.txt" |
        awk '{n++; s+=$6} END {if (n) printf "%.1f items/s over %d searches", s/n, n; else print "none"}')"
      echo "== 64 connections, against the same model in process as serve runs it (its precision, EP options and batch)"
      timeout 120 "${P[@]}" --concurrency 64 --measurement-interval 3000 --max-trials 4 --compare-in-process "$FILE"
      echo "== tune's figure"
      grep -E "^(winner|winner's goodput)" "$L/tune_$NAME.txt" 2>/dev/null
    } >> "$L/replay_${NAME}.txt" 2>&1
    kill $pid; wait $pid
    grep -E "^(load|==|winner)|latency budget|^ +64 |ratio|in process" "$L/replay_${NAME}.txt" | sed "s/^/replay $NAME: /" >> "$L/summary.txt" ;;
  *) echo "unknown part $PART" >&2; exit 2 ;;
esac
step "done $PART"
