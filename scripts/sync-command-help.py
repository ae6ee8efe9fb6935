#!/usr/bin/env python3
"""Commit each command's `--help` into its docs page, so that the pages read whole on GitHub and in an editor.

A page asks for a command's help with a marker line, `<!-- kbtool-help: config set -->`; this script writes the help
below it, exactly as `COLUMNS=80 kbtool config set --help` prints it, up to an end marker `<!-- /kbtool-help -->`
(added the first time). Run it after changing a command's help:

    python3 scripts/sync-command-help.py           # rewrite the pages whose help is out of date
    python3 scripts/sync-command-help.py --check   # exit 1 naming them, write nothing

tests/test_docs_pages.py fails when a committed block differs from the CLI, and docs/hooks.py fails the docs build.
A marker naming no command is an error (exit 2).
"""

import argparse
import os
import re
import sys
from typing import Dict, List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
COLUMNS = 80  # the terminal the help is shown in: what a user sees in any terminal of 80 columns or more
# click wraps help to the terminal's width less 2, at most 78 (click.formatting.HelpFormatter); CliRunner would force
# 80, so the width is passed as the real command computes it (tests/test_docs_pages.py compares with a real `kbtool`)
WIDTH = min(COLUMNS, 80) - 2
START = re.compile(r"<!-- kbtool-help: ([a-z0-9 -]+?) -->")
END = "<!-- /kbtool-help -->"
# a start marker, then the block written last time up to its end marker; a new marker has none (the body may not
# run into the next marker, so a bare marker never swallows the region after it)
REGION = re.compile(
    r"<!-- kbtool-help: (?P<words>[a-z0-9 -]+?) -->"
    r"(?P<body>\n(?:(?!<!-- kbtool-help:).)*?<!-- /kbtool-help -->)?",
    re.DOTALL,
)
FIX = "python3 scripts/sync-command-help.py"


def help_text(words: Sequence[str]) -> str:
    """`kbtool WORDS --help` as the command prints it with COLUMNS=80 (click's own rendering, run in this process)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from click.testing import CliRunner

    from kbtool.cli import main

    runner = CliRunner(env={"COLUMNS": str(COLUMNS)})
    result = runner.invoke(main, [*words, "--help"], prog_name="kbtool", terminal_width=WIDTH)
    if result.exit_code != 0:
        raise ValueError("kbtool-help marker: no command `kbtool {}`".format(" ".join(words)))
    text = result.stdout.rstrip("\n")
    if "```" in text:
        raise ValueError(
            "kbtool-help: the help of `kbtool {}` holds ``` (it would end its code block)".format(" ".join(words))
        )
    return text


def block(words: Sequence[str], helps: Dict[str, str]) -> str:
    """The marker, the command's help as a heading and a code block, and the end marker."""
    command = " ".join(words)
    if command not in helps:
        helps[command] = help_text(words)
    lines = [f"<!-- kbtool-help: {command} -->", "", f"### kbtool {command}", "", "```text"]
    lines += [f"$ kbtool {command} --help", helps[command], "```", "", END]
    return "\n".join(lines)


def synced(markdown: str, helps: Dict[str, str]) -> str:
    """The page with every marker's block written afresh (`helps` caches the help of each command)."""
    return REGION.sub(lambda match: block(match.group("words").split(), helps), markdown)


def pages() -> List[str]:
    """Every Markdown page under docs/, sorted."""
    found = [os.path.join(folder, name) for folder, _, names in os.walk(DOCS) for name in names if name.endswith(".md")]
    return sorted(found)


def stale_pages(write: bool) -> List[str]:
    """The pages (relative to the repository) whose committed help differs from the CLI; rewritten when `write`."""
    helps: Dict[str, str] = {}
    stale = []
    for path in pages():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fresh = synced(text, helps)
        if fresh == text:
            continue
        stale.append(os.path.relpath(path, ROOT))
        if write:
            with open(path, "w", encoding="utf-8") as f:
                f.write(fresh)
    return stale


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is out of date")
    args = parser.parse_args(argv)
    try:
        stale = stale_pages(write=not args.check)
    except ValueError as exc:
        print(f"sync-command-help: error: {exc}", file=sys.stderr)
        return 2
    for path in stale:
        print(f"{path}: {'out of date' if args.check else 'updated'}")
    if args.check and stale:
        print(f"run `{FIX}`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
