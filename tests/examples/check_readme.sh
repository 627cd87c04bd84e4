#!/usr/bin/env bash
# The manual's worked examples are these files, verbatim: every fenced block in
# docs/extending.md preceded by a line `<!-- example: tests/examples/NAME -->` must equal that
# file, so the docs cannot drift from the code that example_tests compiles and runs.
#   tests/examples/check_readme.sh [SOURCE_DIR]
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
/usr/bin/env python3 - "$src" <<'PY'
import pathlib, re, sys
src = pathlib.Path(sys.argv[1])
doc = "docs/extending.md"
text = (src / doc).read_text()
blocks = re.findall(r"<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```\n", text, flags=re.S)
bad = 0
for path, body in blocks:
    f = src / path
    if not f.exists():
        print(f"check_readme: {doc} names {path}, which does not exist"); bad += 1; continue
    if f.read_text() != body:
        print(f"check_readme: {doc}'s block for {path} differs from the file (copy the file into {doc})"); bad += 1
names = {p for p, _ in blocks}
for f in sorted((src / "tests/examples").glob("my_*.cpp")):
    rel = str(f.relative_to(src))
    if rel not in names:
        print(f"check_readme: {rel} is not shown in {doc}"); bad += 1
if len(blocks) < 3:
    print(f"check_readme: expected >= 3 example blocks in {doc}, found {len(blocks)}"); bad += 1
print(f"check_readme: {len(blocks)} examples in {doc}, {bad} problem(s)")
sys.exit(1 if bad else 0)
PY
