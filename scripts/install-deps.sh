#!/usr/bin/env bash
# Installs what psgd-workbench needs from Debian's packages, and nothing else.
# Idempotent: packages already present are skipped, so `make demo` / `make test`
# can call it on every invocation at the cost of one dpkg query.
# Works as root (CI, containers) without sudo; uses sudo otherwise.
#   WB_WITH_TORCH=1  also install python3-torch (the PyTorch peer for bench_lenet
#                    and the golden-gradient test; both skip cleanly without it).
#   WB_WITH_FUZZ=1   also install clang and its libFuzzer runtime (make ... fuzz).
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  mpich libmpich-dev          # MPI (DESIGN.md: MPICH 4)
  libopenmpi-dev openmpi-bin  # the second MPI family, built and tested by mk/openmpi.mk
  libhdf5-dev                 # HDF5 C library (serial), results files
  nlohmann-json3-dev          # experiment specs
  doctest-dev                 # unit + MPI tests
  libbenchmark-dev            # Google Benchmark: the kernel micro-benchmarks (bench/micro)
  libbenchmark-tools python3-scipy   # its compare.py (scripts/bench-compare.sh); scipy for its U test
  zlib1g-dev                  # gzip'd IDX files
  python3-h5py python3-numpy python3-matplotlib python3-pandas jupyter-nbconvert python3-ipykernel   # analysis/ (Debian's /usr/bin/python3)
  dataset-fashion-mnist       # default image data set (/usr/share/datasets/fashion-mnist)
  environment-modules         # `module load psgd-workbench` of an installed tree (tests/install)
  bible-kjv bible-kjv-text    # the gpt model's default corpus (the King James Bible, `bible`)
)
if [[ "${WB_WITH_TORCH:-0}" == 1 ]]; then pkgs+=(python3-torch); fi
if [[ "${WB_WITH_FUZZ:-0}" == 1 ]]; then pkgs+=(clang libclang-rt-14-dev); fi

# Open MPI's Debian alternatives outrank MPICH's, so installing it in auto mode would turn
# the plain mpicc/mpirun (and the mpi.h include link) into Open MPI's. MPICH stays the
# default MPI: these are pinned to it unless someone chose otherwise (manual mode).
pin_mpich() {
  command -v update-alternatives >/dev/null && [[ -x /usr/bin/mpicc.mpich ]] || return 0
  local name target
  for name in mpi:/usr/bin/mpicc.mpich mpirun:/usr/bin/mpirun.mpich \
              mpi-x86_64-linux-gnu:/usr/include/x86_64-linux-gnu/mpich; do
    target=${name#*:}; name=${name%%:*}
    if update-alternatives --query "$name" 2>/dev/null | grep -q '^Status: auto' &&
       ! update-alternatives --query "$name" | grep -q "^Value: $target\$"; then
      $SUDO update-alternatives --set "$name" "$target" >/dev/null && echo "install-deps: $name -> $target (MPICH stays the default)"
    fi
  done
}

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
SUDO=""
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  [[ $(id -u) -ne 0 ]] || pin_mpich
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
pin_mpich
