#!/usr/bin/env python3
"""subproject_targets.py MESON BUILD [--targets NAME...] [--tests yes|no]

Checks what the cmdgraph subproject of a configured Meson build defines: with --targets, its
targets are exactly NAME... (the custom steps lib/ runs to build the library itself, such as the
device link of its CUDA dispatchers, are parts of the library, not targets of their own); with
--tests, whether any of its tests are in the parent's suite.
Never any target from samples/, bench/ or tests/sanitizers/ (not asked for in these tests).
"""
import argparse
import json
import subprocess
import sys


def introspect(meson, build, what):
    return json.loads(subprocess.check_output([meson, "introspect", build, what]))


def library_step(target):
    return target["type"] == "custom" and "/lib/" in target["defined_in"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("meson")
    parser.add_argument("build")
    parser.add_argument("--targets", nargs="*")
    parser.add_argument("--tests", choices=["yes", "no"])
    args = parser.parse_args()

    targets = [t for t in introspect(args.meson, args.build, "--targets")
               if t["subproject"] == "cmdgraph"]
    names = sorted(t["name"] for t in targets if not library_step(t))
    tests = [t["name"] for t in introspect(args.meson, args.build, "--tests")
             if any(s.startswith("cmdgraph:") for s in t["suite"])]
    print(f"cmdgraph subproject: {len(names)} targets, {len(tests)} tests in the parent's suite")
    failures = []
    if args.targets is not None and names != sorted(args.targets):
        failures.append(f"targets {names}, expected {sorted(args.targets)}")
    if args.tests is not None and bool(tests) != (args.tests == "yes"):
        failures.append(f"tests {tests[:5]}..., expected {'some' if args.tests == 'yes' else 'none'}")
    unasked = [t["name"] for t in targets
               if any(f"/{room}/" in t["defined_in"] for room in ("samples", "bench", "sanitizers"))]
    if unasked:
        failures.append(f"built although not asked for: {unasked}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
