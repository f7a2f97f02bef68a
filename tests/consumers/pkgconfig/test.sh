#!/usr/bin/env bash
# consumer_pkgconfig [BUILD]: installs a cmdgraph build (default: this one) into a fresh
# prefix and builds tests/consumers/app.cpp with g++ and nothing but pkg-config's flags, then
# with `pkg-config --static`, and runs both. For a shared libcmdgraph it also checks the
# versioned SONAME and that the program loads the installed library through it.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
build=${1:-$CMDGRAPH_BUILD}
work=$(fresh_work "pkgconfig_$(basename "$build")")
stage_install "$build" "$work/stage"
cp "$consumers/app.cpp" "$work/"
cd "$work"

shared=$libdir/libcmdgraph.so.$CMDGRAPH_VERSION
if [[ -e $shared ]]; then
  # README's rule: the SONAME has major.minor while the major version is 0, else the major.
  IFS=. read -r major minor _ <<<"$CMDGRAPH_VERSION"
  expected=libcmdgraph.so.$major
  [[ $major == 0 ]] && expected=libcmdgraph.so.0.$minor
  soname=$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  echo "SONAME of $(basename "$shared"): $soname"
  [[ $soname == "$expected" ]] || { echo "expected the SONAME $expected"; exit 1; }
  for link in libcmdgraph.so "$soname"; do
    [[ $(readlink -f "$libdir/$link") == "$shared" ]] || { echo "$link does not lead to $shared"; exit 1; }
  done
fi

echo "pkg-config --cflags --libs cmdgraph: $(pkg-config --cflags --libs cmdgraph)"
# README: for the shared library, --libs is the library alone.
if [[ -e $shared ]]; then
  for word in $(pkg-config --libs cmdgraph); do
    [[ $word == -L* || $word == -lcmdgraph ]] || { echo "--libs has $word beside -lcmdgraph"; exit 1; }
  done
fi
if [[ -n ${CONSUMER_NVCC:-} ]]; then
  # The CUDA runtime's folder must be named: it is seldom on the linker's path (on some
  # machines it is, and the link below alone would not notice).
  found=
  for dir in $(pkg-config --static --libs-only-L cmdgraph); do
    [[ -e ${dir#-L}/libcudart.so ]] && found=${dir#-L}
  done
  [[ -n $found ]] || { echo "pkg-config names no folder holding libcudart.so"; exit 1; }
  echo "the CUDA runtime comes from $found"
fi
# [readme:pkg-config]
g++ app.cpp $(pkg-config --cflags --libs cmdgraph) -o app
./app
# [/readme]
g++ app.cpp $(pkg-config --static --cflags --libs cmdgraph) -o app_static_flags
./app_static_flags

if [[ -e $shared ]]; then
  output_matches "$soname => $libdir/$soname" ldd app || { ldd app; echo "app does not load $libdir/$soname"; exit 1; }
elif output_matches 'NEEDED.*libcmdgraph' readelf -d app; then
  echo "app depends on a shared libcmdgraph, but this build installed the static one"
  exit 1
fi
