"""The one writer of the docs' generated blocks: the text between
``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` (scripts/docs.py lists who
owns which block). Every generator script replaces its blocks through `replace_block`;
one whose block is cheap to make checks it with `write_or_check` (``--check``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path


def replace_block(text: str, name: str, body: str, where: str | Path = "") -> str:
    """``text`` with block ``name``'s body replaced by ``body`` (ending in one newline),
    the prose around it kept; a missing block stops the script, naming ``where``."""
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n)(?:.*?\n)?"
                         rf"(<!-- /generated:{re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{where or 'the page'}: no <!-- generated:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)


def write_or_check(page: Path, name: str, body: str, check: bool, how: str) -> int:
    """Write block ``name`` of ``page``, or with ``check`` only compare it (exit status 1
    and a message saying ``how`` to regenerate it when the committed block differs)."""
    text = page.read_text(encoding="utf-8")
    new = replace_block(text, name, body, page)
    if check:
        if new != text:
            print(f"{page}: the generated block {name!r} differs; run {how}", file=sys.stderr)
            return 1
        return 0
    page.write_text(new, encoding="utf-8")
    return 0
