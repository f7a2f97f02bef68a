#!/usr/bin/env bash
# install_builds_only_installed: installing builds what it installs and nothing else. Configures
# a fresh host-only build of this source with its tests, samples and benchmarks on (compiled
# without optimisation: which targets get built is what matters here), runs README's install
# command into a fresh prefix, and fails if the build log names an output of a target that is
# not installed (a test, a sample, a benchmark) or an installed file is missing. Also fails if
# this build or the fresh one builds by default a target that is not installed: a plain
# `meson install` builds the default target first, so with Meson 1.7 or later (which no longer
# adds what tests use to it) a plain `meson install` is as lean; checked when this Meson is.
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
meson() { "$MESON" "$@"; }
work=$(fresh_work install)
check() { python3 "$consumers/built_outputs.py" "$MESON" "$@"; }

check "$CMDGRAPH_BUILD" --default-targets

# tools/dev runs this build's meson.
mkdir "$work/bin"
ln -s "$MESON" "$work/bin/meson"
export PATH=$work/bin:$PATH
export CMDGRAPH_BUILD_DIR=$work/build
options=(-Dcuda=disabled -Dsanitizers=disabled -Ddocs=disabled
         -Dtests=enabled -Dsamples=enabled -Dbench=enabled -Doptimization=0 -Ddebug=false)
export CMDGRAPH_MESON_ARGS="${options[*]}"
prefix=$work/prefix
cd "$CMDGRAPH_SOURCE"

# [readme:install]
tools/dev install --prefix "$prefix"
# [/readme]

build=$CMDGRAPH_BUILD_DIR
check "$build" --log-from 1 --default-targets --installed-files
version=$(meson --version)
if python3 -c 'import sys; sys.exit(tuple(map(int, sys.argv[1].split(".")[:2])) < (1, 7))' "$version"; then
  from=$(($(wc -l <"$build/.ninja_log") + 1))
  meson install -C "$build" --destdir "$work/stage" --quiet
  check "$build" --log-from "$from"
else
  pending=$(ninja -C "$build" -n | grep -c '^\[' || true)
  echo "Meson $version puts what tests use in the default target: a plain meson install" \
    "would first build $pending more outputs here (not checked)"
fi
