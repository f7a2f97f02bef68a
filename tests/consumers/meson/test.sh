#!/usr/bin/env bash
# consumer_meson: builds tests/consumers/meson, which takes cmdgraph as a subproject through
# its .wrap, and runs its test. Checks that the subproject is lean: the library is its only
# target, the parent's test suite holds none of cmdgraph's tests until they are asked for, and
# the parent's C++ program links as C++ (not through nvcc).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
meson() { "$MESON" "$@"; }
work=$(fresh_work meson)
mkdir "$work/app"
cp -r "$consumers/meson/." "$consumers/app.cpp" "$work/app/"
ln -s "$CMDGRAPH_SOURCE" "$work/app/subprojects/cmdgraph"  # as if the wrap had fetched it
# The subproject's CUDA backends follow this build's: nvcc on PATH or none at all.
if [[ -n ${CONSUMER_NVCC:-} ]]; then
  PATH=$(dirname "$CONSUMER_NVCC"):$PATH
else
  PATH=$(python3 -c 'import os, sys; print(":".join(d for d in sys.argv[1].split(":")
    if d and not os.access(os.path.join(d, "nvcc"), os.X_OK)))' "$PATH")
fi
cd "$work/app"

# [readme:meson]
meson setup build --force-fallback-for=cmdgraph
meson compile -C build
meson test -C build
# [/readme]

# A pure C++ program of the parent links as C++, whatever backends the subproject has.
grep -qE '^build app: cpp_LINKER' build/build.ninja \
  || { grep -E '^build app:' build/build.ninja; echo "app does not link as C++"; exit 1; }

check=$consumers/subproject_targets.py
"$check" "$MESON" build --targets cmdgraph --tests no
# Asked for, cmdgraph's tests come (only configured here, not built), without sanitized copies.
meson setup --reconfigure build -Dcmdgraph:tests=enabled
"$check" "$MESON" build --tests yes

# The subproject took the CUDA backends exactly when nvcc was there.
expected=OFF
[[ -n ${CONSUMER_NVCC:-} ]] && expected=ON
grep -q "set(cmdgraph_CUDA $expected)" build/subprojects/cmdgraph/lib/package/cmdgraphConfig.cmake \
  || { echo "the subproject's CUDA backends are not $expected"; exit 1; }
