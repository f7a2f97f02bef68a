#!/usr/bin/env bash
# consumer_static: configures and builds cmdgraph again with -Ddefault_library=static (the
# library alone) as a release build (-O3 with -Werror, which once failed on a false warning
# of GCC 12 that the default build never saw), then runs the pkg-config consumer (whose
# `pkg-config --libs` must then carry all the static library needs) and the CMake consumer
# against an install of it.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
work=$(fresh_work static)
cuda=disabled
if [[ -n ${CONSUMER_NVCC:-} ]]; then
  cuda=enabled
  export PATH=$(dirname "$CONSUMER_NVCC"):$PATH
fi
build=$work/build-static
"$MESON" setup "$build" "$CMDGRAPH_SOURCE" -Ddefault_library=static --buildtype=release -Dcuda=$cuda \
  -Dgpu_arch="$GPU_ARCH" -Dtests=disabled -Dsamples=disabled -Dbench=disabled -Ddocs=disabled
nice "$MESON" compile -C "$build"

"$consumers/pkgconfig/test.sh" "$build"
"$consumers/cmake/test.sh" host "$build"
