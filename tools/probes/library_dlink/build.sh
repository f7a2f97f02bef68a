#!/bin/bash
# Builds the archive (rdc + device link inside it) and a consumer linked by g++ with -lcudart
# alone, then runs it. Usage: tools/probes/library_dlink/build.sh OUTDIR
set -euo pipefail
here=$(dirname "$0") out=${1:-/tmp/library_dlink}
mkdir -p "$out"
nvcc -std=c++17 -O2 -arch=sm_90 -rdc=true -Xcompiler -fPIC -c "$here/dispatch.cu" -o "$out/dispatch.o"
nvcc -arch=sm_90 -dlink "$out/dispatch.o" -lcudadevrt -Xcompiler -fPIC -o "$out/dispatch_link.o"
ar rcs "$out/libdispatch.a" "$out/dispatch.o" "$out/dispatch_link.o"
nvcc -std=c++17 -O2 -arch=sm_90 -c "$here/consumer.cu" -o "$out/consumer.o"
cuda_lib=$(dirname "$(dirname "$(command -v nvcc)")")/lib64
g++ "$out/consumer.o" -o "$out/consumer" "$out/libdispatch.a" -L"$cuda_lib" -lcudart
"$out/consumer"
