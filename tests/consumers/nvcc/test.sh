#!/usr/bin/env bash
# consumer_nvcc: builds tests/consumers/app.cu with a plain nvcc command line against a fresh
# install and runs it when there is a CUDA device (exit 77, skipped, otherwise). Before that it
# checks what README says about .cu files: a parallel_for functor without CMDGRAPH_HOST_DEVICE
# does not compile, nor does a lambda, with or without --extended-lambda (app.cu, built
# without the flag, shows cmdgraph itself does not need it).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
[[ -n ${CONSUMER_NVCC:-} ]] || skip "cmdgraph was built without CUDA"
nvcc() { "$CONSUMER_NVCC" "$@"; }
work=$(fresh_work nvcc)
stage_install "$CMDGRAPH_BUILD" "$work/stage"
cp "$consumers/app.cu" "$consumers/nvcc/"*.cu "$work/"
cd "$work"
gpu_arch=$GPU_ARCH

# expect_error FILE TEXT [FLAGS...]: compiling FILE fails with a message containing TEXT.
expect_error() {
  local file=$1 text=$2
  shift 2
  if nvcc -std=c++20 -arch=sm_$gpu_arch "$@" -c "$file" -I"$prefix/include" -o /dev/null \
      >"$file.log" 2>&1; then
    echo "$file compiled, but must not"
    exit 1
  fi
  grep -qF -- "$text" "$file.log" || { cat "$file.log"; echo "$file: no '$text' in the errors"; exit 1; }
  echo "$file fails as it should: $(grep -m1 -F -- "$text" "$file.log")"
}
expect_error no_host_device.cu 'calling a __host__ function'
expect_error lambda.cu 'annotation on lambda requires --extended-lambda'
expect_error lambda.cu 'parallel_for functors are copied byte-wise' --extended-lambda
expect_error device_lambda.cu 'no matching function for call to' --extended-lambda

# [readme:nvcc]
nvcc -std=c++20 -cudart=shared -arch=sm_$gpu_arch app.cu -I"$prefix/include" -L"$libdir" -lcmdgraph -o app
# [/readme]
output_matches 'NEEDED.*libcudart\.so' readelf -d app || { echo "app: no libcudart.so"; exit 1; }
if output_matches '\bcudaLaunchKernel\b' nm --defined-only app; then
  echo "app carries a static CUDA runtime"
  exit 1
fi
exec ./app
