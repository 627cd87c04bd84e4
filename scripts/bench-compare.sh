#!/usr/bin/env bash
# Compares the kernel micro-benchmarks (bench/micro, Google Benchmark) of two commits:
# builds the micro binaries of each commit in a temporary git worktree (the `micro` target
# only; ccache, when installed, reuses the objects of earlier builds), runs both on this
# machine with JSON output and repetitions, the two commits' binaries taking turns so that
# load from other processes hits them alike, and runs Google Benchmark's compare.py
# (Debian libbenchmark-tools) on the two JSON files. Both commits must have bench/micro.
#
#   scripts/bench-compare.sh [--reps N] [--min-time S] [--jobs J] [--out DIR] [--keep] REV_A REV_B [FILTER]
#
#   REV_A, REV_B   anything git rev-parse takes (HEAD~1, main, a hash); the same twice
#                  measures the noise
#   FILTER         a --benchmark_filter regex (e.g. 'gemm_bcast/gpt' or 'dot3<float>')
#   --reps N       --benchmark_repetitions (default 9: compare.py's U test calls fewer unreliable)
#   --min-time S   --benchmark_min_time in seconds per repetition (default 0.1: >= 100 iterations
#                  of the slowest kernel)
#   --jobs J       build parallelism (default: nproc)
#   --out DIR      where the JSON files go (default: a new /tmp/bench-compare.XXXXXX)
#   --keep         keep the worktrees (their build trees inside) under DIR (deleted by default)
# Output: compare.py's table (time and CPU columns: (B - A) / A, negative = B faster, and the
# U test's p-values over the repetitions), then the paths of A.json and B.json (every
# binary's benchmarks merged into one file per commit) and of the per-binary files.
set -euo pipefail

die() { echo "bench-compare: $*" >&2; exit 2; }
reps=9 min_time=0.1 jobs=$(nproc) out="" keep=0
args=()
while (($#)); do
  case "$1" in
    --reps) reps=${2:?}; shift 2 ;;
    --min-time) min_time=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (--help lists them)" ;;
    *) args+=("$1"); shift ;;
  esac
done
((${#args[@]} == 2 || ${#args[@]} == 3)) || die "usage: scripts/bench-compare.sh [options] REV_A REV_B [FILTER]"
filter=${args[2]:-}

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
compare=/usr/share/benchmark/compare.py
[[ -f $compare ]] || die "$compare not found: install libbenchmark-tools (scripts/install-deps.sh)"
/usr/bin/python3 -c "import scipy" 2>/dev/null || die "compare.py needs scipy: install python3-scipy (scripts/install-deps.sh)"

sha=()
for r in "${args[0]}" "${args[1]}"; do
  sha+=("$(git -C "$repo" rev-parse --verify --quiet "$r^{commit}")") || die "$r: not a commit"
  git -C "$repo" cat-file -e "${sha[-1]}:bench/micro" 2>/dev/null ||
    die "$r (${sha[-1]:0:10}) has no bench/micro: nothing to compare"
done

if [[ -z $out ]]; then out=$(mktemp -d /tmp/bench-compare.XXXXXX); else mkdir -p "$out"; fi
out=$(cd "$out" && pwd)
cleanup() {
  ((keep)) && return 0
  for side in A B; do
    [[ -d $out/src-$side ]] && git -C "$repo" worktree remove --force "$out/src-$side" >/dev/null 2>&1
  done
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # through the EXIT trap: no worktree left registered

for i in 0 1; do
  side=$([[ $i == 0 ]] && echo A || echo B)
  # The build tree inside the worktree, as a developer's build/ inside the checkout: with
  # CCACHE_BASEDIR at the source tree (CMakeLists.txt), every path of the compile line,
  # the generated headers' included, is then relative, and ccache hits the objects that
  # any other checkout of the same sources compiled.
  src=$out/src-$side build=$out/src-$side/build
  echo "bench-compare: $side = ${args[$i]} (${sha[$i]:0:10}): building the micro binaries in $build"
  [[ -d $src ]] || git -C "$repo" worktree add --detach --quiet "$src" "${sha[$i]}"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWORKBENCH_CUDA=OFF -DWORKBENCH_TESTS=OFF \
        >"$out/configure-$side.log" 2>&1 || die "configure of $side failed: $out/configure-$side.log"
  cmake --build "$build" -j "$jobs" --target micro >"$out/build-$side.log" 2>&1 ||
    die "build of $side failed (is Google Benchmark installed?): $out/build-$side.log"
done

# The binaries of A (the set may differ between the commits: only common ones are compared).
mapfile -t bins < <(cd "$out/src-A/build" && ls micro_* 2>/dev/null | while read -r b; do
  [[ -x $b && -x $out/src-B/build/$b ]] && echo "$b"; done)
((${#bins[@]})) || die "no micro binary common to both commits"

flags=(--benchmark_out_format=json "--benchmark_repetitions=$reps")
flags+=("--benchmark_min_time=$min_time")  # 1.7.1: a plain number of seconds
[[ -n $filter ]] && flags+=("--benchmark_filter=$filter")
for b in "${bins[@]}"; do
  for side in A B; do  # A then B for each binary: both see the same load, near in time
    echo "bench-compare: running $side/$b"
    "$out/src-$side/build/$b" "${flags[@]}" "--benchmark_out=$out/$side-$b.json" >"$out/$side-$b.log" 2>&1 ||
      die "$side/$b failed: $out/$side-$b.log"
  done
done

# One JSON per commit: the first file's context, every binary's benchmarks.
/usr/bin/python3 - "$out" "${bins[@]}" <<'PY'
import json, os, sys
out, bins = sys.argv[1], sys.argv[2:]
for side in "AB":
    merged = None
    for b in bins:
        path = os.path.join(out, f"{side}-{b}.json")
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            continue  # no benchmark of this binary matched the filter
        with open(path) as f:
            doc = json.load(f)
        if merged is None:
            merged = {"context": doc["context"], "benchmarks": []}
        merged["benchmarks"] += doc.get("benchmarks", [])
    if not merged or not merged["benchmarks"]:
        sys.exit("bench-compare: no benchmark matched the filter")
    with open(os.path.join(out, f"{side}.json"), "w") as f:
        json.dump(merged, f, indent=1)
PY

echo
color=()
[[ -t 1 ]] || color=(--no-color)  # no terminal escapes in a file or a pipe
/usr/bin/python3 "$compare" "${color[@]}" benchmarks "$out/A.json" "$out/B.json"
echo
echo "bench-compare: A = ${args[0]} (${sha[0]:0:10}): $out/A.json"
echo "bench-compare: B = ${args[1]} (${sha[1]:0:10}): $out/B.json"
echo "bench-compare: per binary: $out/{A,B}-micro_*.json (logs beside them)"
