#!/usr/bin/env python3
"""built_outputs.py MESON BUILD [--log-from LINE] [--default-targets] [--installed-files]

What a configured cmdgraph build built and would build, against what it installs:
- with --log-from, the outputs in BUILD/.ninja_log from line LINE on must each belong to an
  installed target (its file, or an object in its private folder FILE.p/) or be build.ninja;
- with --default-targets, every target built by default (a plain `ninja`, and so a plain
  `meson install`) must be installed;
- with --installed-files, every file `meson install` installs must be where it says, and every
  cmdgraph header an installed header includes must be installed too (but those included only
  in builds with NCCL, in builds without it).
"""
import argparse
import collections
import os
import sys

from subproject_targets import introspect


def installed_files(targets, build):
    return {os.path.relpath(name, build) for target in targets if target["installed"]
            for name in target["filename"]}


def logged_outputs(build, first_line):
    outputs = []
    with open(os.path.join(build, ".ninja_log"), encoding="utf-8") as log:
        for number, line in enumerate(log, 1):
            fields = line.rstrip("\n").split("\t")
            if number >= first_line and not line.startswith("#") and len(fields) == 5:
                outputs.append(fields[3])
    return outputs


def missing_includes(destinations):
    """The cmdgraph headers that installed headers include but the install lacks."""
    installed = {d for d in destinations}
    headers = [d for d in installed if "/include/cmdgraph/" in d and d.endswith((".hpp", ".cuh"))]
    missing = set()
    for header in headers:
        root = header[:header.index("/include/cmdgraph/") + len("/include/")]
        nccl_only = False
        with open(header, encoding="utf-8") as text:
            for line in text:
                stripped = line.strip()
                if stripped.startswith("#if") and "CMDGRAPH_HAVE_NCCL" in stripped:
                    nccl_only = True
                elif stripped.startswith("#endif"):
                    nccl_only = False
                elif stripped.startswith("#include <cmdgraph/") and not nccl_only:
                    name = stripped[len("#include <"):stripped.index(">")]
                    if os.path.join(root, name) not in installed:
                        missing.add(f"{name} (included by {os.path.relpath(header, root)})")
    return sorted(missing)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("meson")
    parser.add_argument("build")
    parser.add_argument("--log-from", type=int)
    parser.add_argument("--default-targets", action="store_true")
    parser.add_argument("--installed-files", action="store_true")
    args = parser.parse_args()

    targets = introspect(args.meson, args.build, "--targets")
    installed = installed_files(targets, args.build)
    failures = []

    if args.log_from is not None:
        # build.ninja: Meson writing the build again after a new option (the prefix).
        outputs = [o for o in logged_outputs(args.build, args.log_from) if o != "build.ninja"]
        stray = [o for o in outputs
                 if not any(o == f or o.startswith(f + ".p/") for f in installed)]
        print(f"built {len(outputs)} outputs; installed targets: {', '.join(sorted(installed))}")
        if stray:
            rooms = collections.Counter(o.split("/")[0] for o in stray)
            failures.append(f"{len(stray)} outputs belong to no installed target "
                            f"({', '.join(f'{room}/ {n}' for room, n in sorted(rooms.items()))}), "
                            f"e.g. {', '.join(stray[:5])}")

    if args.default_targets:
        extra = sorted(f"{t['name']} ({os.path.basename(os.path.dirname(t['defined_in']))}/)"
                       for t in targets if t["build_by_default"] and not t["installed"])
        print(f"{sum(t['build_by_default'] for t in targets)} of {len(targets)} targets "
              f"built by default")
        if extra:
            failures.append(f"built by default but not installed: {', '.join(extra)}")

    if args.installed_files:
        files = introspect(args.meson, args.build, "--installed")
        missing = sorted(dest for dest in files.values() if not os.path.lexists(dest))
        print(f"{len(files) - len(missing)} of {len(files)} installed files in place")
        if missing:
            failures.append(f"not installed: {', '.join(missing[:10])}")
        unmet = missing_includes(files.values())
        if unmet:
            failures.append(f"installed headers include headers not installed: {', '.join(unmet)}")

    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
