#!/usr/bin/env bash
# consumer_cmake host|cuda [BUILD]: installs a cmdgraph build (default: this one) into a fresh
# prefix, then configures, builds and runs tests/consumers/cmake against it with
# find_package(cmdgraph 0.1). "cuda" builds app.cu too and runs it when there is a CUDA device
# (exit 77, skipped, otherwise).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
mode=$1
build=${2:-$CMDGRAPH_BUILD}
[[ -n ${CONSUMER_CMAKE:-} ]] || skip "cmake not found"
cmake() { "$CONSUMER_CMAKE" "$@"; }
work=$(fresh_work "cmake_${mode}_$(basename "$build")")
stage_install "$build" "$work/stage"
mkdir "$work/app"
cp "$consumers/cmake/CMakeLists.txt" "$consumers/app.cpp" "$consumers/app.cu" "$work/app/"
cd "$work"
export CMAKE_GENERATOR=Ninja

if [[ $mode == host ]]; then
  # [readme:cmake]
  cmake -S app -B build -DCMAKE_PREFIX_PATH="$prefix"
  cmake --build build
  ./build/app
  # [/readme]

  # The version file refuses what 0.1.0 does not satisfy.
  cmake -S "$consumers/cmake/version" -B version -DCMDGRAPH_PACKAGE_DIR="$libdir/cmake/cmdgraph" \
    -DPACKAGE_VERSION_EXPECTED="$CMDGRAPH_VERSION"
  exit 0
fi

[[ -n ${CONSUMER_NVCC:-} ]] || skip "cmdgraph was built without CUDA"
export CUDACXX=$CONSUMER_NVCC
gpu_arch=$GPU_ARCH
# [readme:cmake-cuda]
cmake -S app -B build -DCMAKE_PREFIX_PATH="$prefix" -DWITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$gpu_arch
cmake --build build
# [/readme]
# One CUDA runtime, the shared one libcmdgraph uses: libcudart.so needed, no static copy inside.
output_matches 'NEEDED.*libcudart\.so' readelf -d build/app_cuda || { echo "app_cuda: no libcudart.so"; exit 1; }
if output_matches '\bcudaLaunchKernel\b' nm --defined-only build/app_cuda; then
  echo "app_cuda carries a static CUDA runtime"
  exit 1
fi
exec ./build/app_cuda
