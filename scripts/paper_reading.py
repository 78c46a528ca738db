"""What the paper's own Table 4 rows imply about success under poisoning: the
two-parameter reading (P(success | no compromise), P(success | compromised)) fitted to the
five (ASR, TSR) rows (`wmtsim.studies.compare.paper_reading`), printed; docs/calibration.md's
block of the same text is written by `make docs` (scripts/paper_tables_doc.py).

    python scripts/paper_reading.py                # prints the reading (Markdown)
    python scripts/paper_reading.py --write-docs   # rewrites the generated:paper-reading block
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wmtsim.studies.compare.paper_reading import reading_markdown, two_parameter_reading
from wmtsim.studies.compare.report import paper_table4

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from doc_blocks import replace_block  # noqa: E402 (the one block writer)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-docs", action="store_true",
                    help="rewrite docs/calibration.md's paper-reading block instead of printing")
    args = ap.parse_args()
    body = reading_markdown(two_parameter_reading(paper_table4()))
    if not args.write_docs:
        print(body)
        return
    cal = ROOT / "docs" / "calibration.md"
    cal.write_text(replace_block(cal.read_text(encoding="utf-8"), "paper-reading", body),
                   encoding="utf-8")
    print(f"wrote the paper-reading block of {cal}")


if __name__ == "__main__":
    main()
