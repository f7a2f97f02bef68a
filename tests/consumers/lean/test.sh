#!/usr/bin/env bash
# consumer_lean: a pure C++ program links the installed shared libcmdgraph alone, whatever
# backends it was built with: no CUDA toolkit on the command line or the PATH, no CUPTI, no
# NCCL. Installs this build (shared, the default) into a fresh prefix and checks
#   - libcmdgraph.so needs neither libcupti nor libnccl (it loads them when first needed);
#   - a plain g++ line with -lcmdgraph alone links tests/consumers/app.cpp, and the program
#     needs libcmdgraph and no CUDA library of its own; it is small, and it runs;
#   - the CMake package names no folder of this machine: no CUDA toolkit, source or build path.
# Prints the sizes of the program and of the library.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
work=$(fresh_work lean)
stage_install "$CMDGRAPH_BUILD" "$work/stage"
library=$libdir/libcmdgraph.so
[[ -e $library ]] || skip "this build installs a static libcmdgraph (-Ddefault_library=static)"
cp "$consumers/app.cpp" "$work/"
cd "$work"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
echo "libcmdgraph.so needs: $(needed "$library" | tr '\n' ' ')"
if needed "$library" | grep -E 'libcupti|libnccl'; then
  echo "libcmdgraph.so links CUPTI or NCCL; it must load them when first needed"
  exit 1
fi

# No toolkit anywhere the compiler or linker would look: PATH without nvcc, no library paths.
PATH=$(python3 -c 'import os, sys; print(":".join(d for d in sys.argv[1].split(":")
  if d and not os.access(os.path.join(d, "nvcc"), os.X_OK)))' "$PATH")
unset LIBRARY_PATH CPATH CPLUS_INCLUDE_PATH
g++ -std=c++20 app.cpp -I"$prefix/include" -L"$libdir" -lcmdgraph -o app
echo "app needs: $(needed app | tr '\n' ' ')"
needed app | grep -qx "libcmdgraph.so.*" || { echo "app does not need libcmdgraph"; exit 1; }
if needed app | grep -E 'libcuda|libcupti|libnccl'; then
  echo "app links a CUDA library itself; libcmdgraph alone must be enough"
  exit 1
fi
app_size=$(stat -c %s app)
echo "sizes: app $app_size bytes, libcmdgraph.so $(stat -c %s "$(readlink -f "$library")") bytes"
if (( app_size >= 1000000 )); then
  echo "app is $app_size bytes: it carries more than its own code"
  exit 1
fi
./app

# The CMake package is relocatable and needs nothing of this machine.
config=$libdir/cmake/cmdgraph/cmdgraphConfig.cmake
toolkit=${CONSUMER_NVCC:+$(dirname "$(dirname "$CONSUMER_NVCC")")}
for path in "$CMDGRAPH_SOURCE" "$CMDGRAPH_BUILD" ${toolkit:+"$toolkit"} /usr/local/cuda /usr/lib; do
  if grep -nF -- "$path" "$config"; then
    echo "cmdgraphConfig.cmake names $path, a folder of the machine that built it"
    exit 1
  fi
done
echo "cmdgraphConfig.cmake names no folder of this machine"
