#!/usr/bin/env python3
"""Keeps a document's listings true: every fenced code block whose first line is
"// file: PATH" must appear, from its second line on, verbatim in PATH (relative to the source
root). Run by ctest (Docs.GuideListingsMatchExamples): check_listings.py SOURCE_ROOT DOC..."""
import pathlib
import re
import sys


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    failures = checked = 0
    for doc in sys.argv[2:]:
        text = (root / doc).read_text()
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S):
            first, _, body = block.partition("\n")
            marker = re.fullmatch(r"// file: (\S+)", first)
            if not marker:
                continue
            checked += 1
            if body not in (root / marker[1]).read_text():
                print(f"{doc}: the listing of {marker[1]} differs from that file (update the doc)")
                failures += 1
    print(f"{checked} listings checked, {failures} differ")
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
