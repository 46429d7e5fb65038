#!/usr/bin/env python3
"""Refuses an include that points up the layers.

usage: check_layers.py SOURCE_DIR LAYERS_FILE

LAYERS_FILE (written by CMakeLists.txt) has one line per product folder,
"DIR: DEP_DIR ...", the folders of the clairfs libraries DIR's targets link.
A file in DIR may include from DIR itself and from every folder DIR reaches
through those links. Every product folder that holds code must have a line:
a folder without a library would escape the check. Exit 1 names each bad
include with its file and line.
"""
import os
import re
import sys

PRODUCT_TOPS = ("base", "partitioner", "prefetch", "fs", "tools")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_layers(path):
    deps = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            folder, _, rest = line.partition(":")
            deps.setdefault(folder.strip(), set()).update(rest.split())
    return deps


def reachable(deps, start):
    seen, todo = set(), [start]
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        todo.extend(deps.get(d, ()))
    return seen


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src, layers = sys.argv[1:]
    deps = read_layers(layers)
    problems = []
    for top in PRODUCT_TOPS:
        for dirpath, _, names in os.walk(os.path.join(src, top)):
            code = sorted(n for n in names if n.endswith((".cpp", ".hpp")))
            if not code:
                continue
            folder = os.path.relpath(dirpath, src)
            if folder not in deps:
                problems.append(f"{folder}/: holds code but no library (add a CMakeLists.txt)")
                continue
            allowed = reachable(deps, folder)
            for name in code:
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = os.path.dirname(m.group(1))
                        if target not in allowed:
                            problems.append(
                                f"{folder}/{name}:{number}: includes {m.group(1)}, but {folder} "
                                f"does not link {target} (it may include from: "
                                f"{', '.join(sorted(allowed))})")
    for p in problems:
        print(f"check_layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
