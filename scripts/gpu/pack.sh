#!/usr/bin/env bash
# Stage a CUDA build for a GPU machine that lacks the project's build dependencies (MPI,
# HDF5, the Debian Fashion-MNIST package): the executables, the shared libraries they load
# (glibc and the C++ runtime excepted: the GPU machine's own are used), MPICH's launcher and
# the data set, under .gpu/ (git-ignored). scripts/gpu/device_check.sh runs there.
#
#   cmake -S . -B build-gpu -DWORKBENCH_NATIVE=OFF -DWORKBENCH_CUDA=ON \
#         -DCMAKE_CUDA_ARCHITECTURES=90          # portable host code, Hopper kernels
#   cmake --build build-gpu -j --target workbench cuda_tests bench_gpu
#   scripts/gpu/pack.sh build-gpu
#
# WORKBENCH_NATIVE=OFF: the GPU machine's CPU is not this one; -march=native code may not
# run there.
set -euo pipefail
build=${1:-build-gpu}
cd "$(dirname "$0")/../.."
for b in workbench cuda_tests bench_gpu; do
  [[ -x $build/$b ]] || { echo "pack.sh: $build/$b is missing: build it first" >&2; exit 2; }
done
rm -rf .gpu
mkdir -p .gpu/lib .gpu/bin .gpu/fashion-mnist
# Stripped copies: the carried tree is limited in size.
# The executables stay in the build tree (its CTest file names them there): strip them
# in place, the carried tree is limited in size.
for b in workbench cuda_tests bench_gpu; do strip "$build/$b"; done
skip='^(libc|libm|libdl|librt|libpthread|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'
libs=$( (ldd "$build"/workbench "$build"/cuda_tests "$build"/bench_gpu \
         /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy) | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
       sort -u)
for l in $libs; do
  base=$(basename "$l")
  [[ $base =~ $skip ]] && continue
  cp -L "$l" ".gpu/lib/$base"
done
# UCX loads its transports from <dir of libucs>/ucx.
mkdir -p .gpu/lib/ucx && cp -L /usr/lib/x86_64-linux-gnu/ucx/*.so.0 .gpu/lib/ucx/ 2>/dev/null || true
cp /usr/bin/mpiexec.hydra .gpu/bin/mpiexec.hydra
cp /usr/bin/hydra_pmi_proxy .gpu/bin/hydra_pmi_proxy
ln -s mpiexec.hydra .gpu/bin/mpirun
strip --strip-unneeded .gpu/lib/*.so* .gpu/lib/ucx/*.so* .gpu/bin/mpiexec.hydra \
  .gpu/bin/hydra_pmi_proxy 2>/dev/null || true
# One compressed archive (the carried tree is limited to 64 MiB): the libraries, the
# launcher and the build tree's executables and CTest file; device_check.sh unpacks it.
tar -cJf .gpu/stage.tar.xz -C .gpu lib bin -C .. "$build/workbench" "$build/cuda_tests" \
  "$build/bench_gpu" "$build/CTestTestfile.cmake"
rm -rf .gpu/lib .gpu/bin
cp /usr/share/datasets/fashion-mnist/*.gz .gpu/fashion-mnist/
du -sh .gpu
