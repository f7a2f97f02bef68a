# Shared by the consumer tests (sourced): strict shell, a fresh work folder, and
# stage_install, which installs a cmdgraph build the way a user would, into a fresh prefix.
# The environment comes from tests/consumers/meson.build.
set -euo pipefail
: "${CMDGRAPH_SOURCE:?}" "${CMDGRAPH_BUILD:?}" "${CONSUMER_WORK:?}" "${MESON:?}"

consumers=$CMDGRAPH_SOURCE/tests/consumers

# fresh_work NAME: an empty folder for this test under the build tree; prints its path.
fresh_work() {
  local dir=$CONSUMER_WORK/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "$dir"
}

# skip MESSAGE: reports the test skipped (meson's exit code 77).
skip() {
  echo "SKIP: $*"
  exit 77
}

# output_matches PATTERN COMMAND...: whether COMMAND's output has a line matching the extended
# regular expression PATTERN. The output is read whole first: `COMMAND | grep -q` under
# pipefail fails at random when grep stops reading early and COMMAND dies of SIGPIPE.
output_matches() {
  local pattern=$1 output
  shift
  output=$("$@") || return 2
  grep -qE -- "$pattern" <<<"$output"
}

# stage_install BUILD STAGE: `meson install` of BUILD into the empty DESTDIR STAGE; sets
# prefix, libdir (absolute, under STAGE), PKG_CONFIG_PATH and LD_LIBRARY_PATH for the
# installed copy.
stage_install() {
  local build=$1 stage=$2
  rm -rf "$stage"
  "$MESON" install -C "$build" --destdir "$stage" --no-rebuild --quiet
  local options
  options=$("$MESON" introspect "$build" --buildoptions)
  read -r prefix libdir < <(python3 -c '
import json, os, sys
opts = {o["name"]: o["value"] for o in json.loads(sys.argv[1])}
prefix = opts["prefix"]
print(prefix, os.path.join(prefix, opts["libdir"]))' "$options")
  prefix=$stage$prefix
  libdir=$stage$libdir
  [[ -f $libdir/pkgconfig/cmdgraph.pc ]] || { echo "no cmdgraph.pc under $libdir"; exit 1; }
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  # A program linked with the shared library finds it as README says, unless its build gave
  # it a RUNPATH (CMake and Meson do).
  if [[ -e $libdir/libcmdgraph.so ]]; then
    export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
}
