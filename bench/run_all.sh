#!/usr/bin/env bash
# Run the three mbd_ros benchmarks and write their markdown to bench/results/.
#
#   bench/run_all.sh [--quick]         from the repository root or anywhere
#   PYTHON=/path/to/python bench/run_all.sh
#
# Uses $PYTHON (default: python3) with the repository on PYTHONPATH, so no install is needed
# (numpy, numba, scipy, pyyaml, lxml, yourdfpy, pin and example-robot-data must be importable).
# Writes bench/results/{per_call,batch,compile}.md and bench/results/all.md (the three joined,
# ready to paste into bench/RESULTS.md). Exit status is non-zero if a correctness check failed.
set -u
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
QUICK=()
[ "${1:-}" = "--quick" ] && QUICK=(--quick)
if ! "$PYTHON" -c "import numpy, numba, pinocchio, yourdfpy" 2>/dev/null; then
  echo "$PYTHON lacks numpy/numba/pinocchio/yourdfpy: set PYTHON=<venv>/bin/python" \
       "or pip install -e '.[bench]'" >&2
  exit 2
fi
OUT=bench/results
mkdir -p "$OUT"
rm -f "$OUT/per_call.md" "$OUT/batch.md" "$OUT/compile.md" "$OUT/all.md"
status=0
echo "== per-call (bench_per_call.py)" >&2
"$PYTHON" bench/bench_per_call.py "${QUICK[@]}" --out "$OUT/per_call.md" >/dev/null || status=1
echo "== batches (bench_batch.py)" >&2
"$PYTHON" bench/bench_batch.py "${QUICK[@]}" --out "$OUT/batch.md" >/dev/null || status=1
echo "== start-up / compilation (bench_compile.py)" >&2
"$PYTHON" bench/bench_compile.py "${QUICK[@]}" --out "$OUT/compile.md" >/dev/null || status=1
for f in per_call batch compile; do
  [ -f "$OUT/$f.md" ] && { cat "$OUT/$f.md"; echo; }
done > "$OUT/all.md"
echo "written: $OUT/per_call.md $OUT/batch.md $OUT/compile.md $OUT/all.md (status $status)" >&2
exit $status
