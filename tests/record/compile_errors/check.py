#!/usr/bin/env python3
"""Compiles each program of this folder, which must fail: a wrong kernel argument is one
static_assert naming its place and both types. Each file says what its error must contain on
a line `// expect: REGEX`; the compiler must report exactly one error.
Usage: check.py COMPILER... -- FLAGS..."""
import pathlib
import re
import subprocess
import sys

args = sys.argv[1:]
split = args.index("--")
compiler, flags = args[:split], args[split + 1:]
failures = 0
for source in sorted(pathlib.Path(__file__).parent.glob("*.cpp")):
    expected = re.search(r"^// expect: (.*)$", source.read_text(), re.M).group(1)
    run = subprocess.run(compiler + flags + ["-fsyntax-only", str(source)],
                         capture_output=True, text=True)
    output = run.stdout + run.stderr
    errors = [line for line in output.splitlines() if re.search(r"\berror\b:", line)]
    problem = None
    if run.returncode == 0:
        problem = "compiled, but must not"
    elif len(errors) != 1:
        problem = f"{len(errors)} errors, expected one:\n" + "\n".join(errors[:10])
    elif not re.search(expected, output):
        problem = f"no '{expected}' in the compiler's output"
    if problem:
        failures += 1
        print(f"{source.name}: {problem}\n--- compiler output ---\n{output[:4000]}")
    else:
        print(f"{source.name}: refused as expected: {errors[0].strip()}")
print(f"{failures} of {len(list(pathlib.Path(__file__).parent.glob('*.cpp')))} failed")
sys.exit(1 if failures else 0)
