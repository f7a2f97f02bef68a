#!/usr/bin/env python3
"""check_readme.py SOURCE_ROOT: README.md says only what the tests show.

- Each code block introduced by `<!-- from PATH -->` is the whole file PATH; one introduced by
  `<!-- from PATH#NAME -->` is the region of PATH between `# [readme:NAME]` and `# [/readme]`
  (dedented): the consumer tests run those very lines. The blocks of REQUIRED must be there.
- The table introduced by `<!-- options -->` lists exactly meson_options.txt's options, in
  order, with their types and defaults.
- Every `-Dname=value` in README naming a project option gives a value that option takes.
- Every link into a Markdown file of docs/ with an anchor (`docs/guide.md#5-updates-and-frames`)
  names a heading of that file, as GitHub makes anchors of headings.
"""
import re
import sys
import textwrap
from pathlib import Path

REQUIRED = {
    "tests/consumers/cmake/CMakeLists.txt",
    "tests/consumers/cmake/test.sh#cmake",
    "tests/consumers/cmake/test.sh#cmake-cuda",
    "tests/consumers/pkgconfig/test.sh#pkg-config",
    "tests/consumers/nvcc/test.sh#nvcc",
    "tests/consumers/meson/meson.build",
    "tests/consumers/meson/subprojects/cmdgraph.wrap",
    "tests/consumers/meson/test.sh#meson",
    "tests/consumers/install/test.sh#install",
}
SNIPPET = re.compile(r"<!-- from (\S+?) -->\s*\n```[a-z]*\n(.*?)```", re.S)
OPTION = re.compile(r"option\('(\w+)',\s*type:\s*'(\w+)',\s*value:\s*('[^']*'|\w+)", re.S)
ROW = re.compile(r"^\| `(\w+)` \| (\w+) \| `([^`]*)` \|", re.M)
DEFINE = re.compile(r"-D(?:cmdgraph:)?([a-z_]+)=([^\s`,)|]+)")
BUILTIN = {"default_library", "buildtype", "prefix", "libdir", "werror", "warning_level",
           "cpp_std", "wrap_mode", "b_sanitize", "b_ndebug"}
VALUES = {"feature": {"enabled", "disabled", "auto"}, "boolean": {"true", "false"}}
DOC_LINK = re.compile(r"\]\((docs/[\w./-]+\.md)#([\w-]+)\)")


def anchors(markdown):
    """The anchors GitHub gives the headings of `markdown` (code blocks left out)."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#{1,6} +(.+?)\s*$", text, re.M)}


def region(path, name):
    text = path.read_text()
    match = re.search(rf"^[ \t]*# \[readme:{re.escape(name)}\]\n(.*?)^[ \t]*# \[/readme\]",
                      text, re.S | re.M)
    return textwrap.dedent(match.group(1)) if match else None


def main(root):
    readme = (root / "README.md").read_text()
    failures = []

    seen = set()
    for source, block in SNIPPET.findall(readme):
        seen.add(source)
        path_text, _, name = source.partition("#")
        path = root / path_text
        if not path.exists():
            failures.append(f"README quotes {path_text}, which does not exist")
            continue
        expected = region(path, name) if name else path.read_text()
        if expected is None:
            failures.append(f"{path_text} has no region '{name}'")
        elif block.strip() != expected.strip():
            failures.append(f"README's block from {source} differs from it:\n{block}\n---\n{expected}")
    failures += [f"README lacks the block from {source}" for source in sorted(REQUIRED - seen)]

    options = OPTION.findall((root / "meson_options.txt").read_text())
    declared = [(name, kind, value.strip("'")) for name, kind, value in options]
    table = readme.split("<!-- options -->", 1)
    listed = ROW.findall(table[1].split("\n\n", 1)[0]) if len(table) == 2 else []
    if listed != declared:
        failures.append(f"README's option table {listed} is not meson_options.txt's {declared}")

    kinds = {name: kind for name, kind, _ in declared}
    for name, value in DEFINE.findall(readme):
        if name in BUILTIN:
            continue
        if name not in kinds:
            failures.append(f"README sets -D{name}, which is no option of cmdgraph")
        elif kinds[name] in VALUES and value not in VALUES[kinds[name]]:
            failures.append(f"README sets -D{name}={value}; {name} is a {kinds[name]}")

    links = DOC_LINK.findall(readme)
    for path_text, anchor in links:
        target = root / path_text
        if not target.exists():
            failures.append(f"README links to {path_text}, which does not exist")
        elif anchor not in anchors(target.read_text()):
            failures.append(f"README links to {path_text}#{anchor}: {path_text} has no such "
                            f"heading")

    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"README: {len(seen)} quoted blocks, {len(listed)} options and {len(links)} links "
          f"into docs/ checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
