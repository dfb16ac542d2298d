#!/usr/bin/env bash
# Before/after benchmarks of two checkouts of mbd_ros, alternated run by run on one machine.
#
#   bench/compare_revisions.sh BEFORE_DIR [ROUNDS]     (from anywhere; ROUNDS default 2)
#   PYTHON=/path/to/python bench/compare_revisions.sh ../mbd_ros-5a7914c
#
# BEFORE_DIR is another checkout of this repository (e.g. `git worktree add ../before REV`,
# with its C extension built in place: `python setup.py build_ext --inplace` there). Each
# benchmark compares mbd_ros with its peer (Pinocchio, Exudyn) in one process, interleaved, as
# ratios; this script runs every benchmark of each checkout in turn, before / after / after /
# before ..., so that a slow minute of a shared machine does not fall on one side only. Each
# run uses its own checkout's copy of the benchmark script (they differ only in internal import
# paths). Output: bench/results/compare/<benchmark>.<before|after>.<round>.md, with the CPU
# model, load and revision printed by each script at its top.
set -u
BEFORE="$(cd "${1:?usage: compare_revisions.sh BEFORE_DIR [ROUNDS]}" && pwd)"
ROUNDS="${2:-2}"
AFTER="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
OUT="$AFTER/bench/results/compare"
mkdir -p "$OUT"
BENCHES=(
  "per_call:bench_per_call.py --rounds 60 --chains 10,50"
  "codegen:bench_codegen.py --quick --startup-robots panda"
  "closed_loops:bench_closed_loops.py --rounds 60"
  "flexible:bench_flexible.py --quick"
)
run() {   # label dir round name args...
  local label=$1 dir=$2 round=$3 name=$4; shift 4
  echo "== $name $label round $round ($(date -u +%H:%M:%S))" >&2
  (cd "$dir" && PYTHONPATH="$dir" "$PYTHON" bench/"$@" --out "$OUT/$name.$label.$round.md" \
     > "$OUT/$name.$label.$round.log" 2>&1) || echo "   failed: see $OUT/$name.$label.$round.log" >&2
}
for round in $(seq 1 "$ROUNDS"); do
  for entry in "${BENCHES[@]}"; do
    name=${entry%%:*}; args=${entry#*:}
    if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for label in $order; do
      dir=$BEFORE; [ "$label" = after ] && dir=$AFTER
      # shellcheck disable=SC2086
      run "$label" "$dir" "$round" "$name" $args
    done
  done
done
echo "node latency (interleaved before/after inside one run):" >&2
(cd "$AFTER" && PYTHONPATH="$AFTER" "$PYTHON" bench/node_latency.py --before "$BEFORE" \
   > "$OUT/node_latency.log" 2>&1) || echo "   failed: see $OUT/node_latency.log" >&2
echo "written: $OUT" >&2
