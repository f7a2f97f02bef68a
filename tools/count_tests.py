#!/usr/bin/env python3
"""Sums meson test logs (one per test setup run) into one line, "N passed, N failed".

A doctest suite counts its test cases (from its own summary line); any other test counts as
one. A suite that crashed or timed out before its summary counts as one failure more than the
cases it reported. A skipped suite (a GPU suite without a GPU) counts neither way.
"""
import json
import os
import re
import sys

SUMMARY = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")


def count(path):
    """(passed, failed) of one log; a missing log (its run never started) is one failure."""
    if not os.path.exists(path):
        print(f"{path}: no such test log", file=sys.stderr)
        return 0, 1
    passed = failed = 0
    with open(path) as log:
        for line in log:
            entry = json.loads(line)
            if entry.get("result") == "SKIP":
                continue
            ok = entry.get("result") in ("OK", "EXPECTEDFAIL")
            found = SUMMARY.findall(entry.get("stdout") or "")
            if found:
                _, p, f = map(int, found[-1])
                passed += p
                failed += f
                if not ok and f == 0:
                    failed += 1
            elif ok:
                passed += 1
            else:
                failed += 1
    return passed, failed


def main(paths):
    passed = failed = 0
    for path in paths:
        p, f = count(path)
        passed += p
        failed += f
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["build/meson-logs/testlog.json"]))
