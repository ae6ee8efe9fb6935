"""mkdocs hook (mkdocs.yml `hooks:`): fills each `<!-- kbtool-help: COMMAND -->` marker with that command's --help
text at 80 columns, so the command pages never drift from the CLI, and publishes reports/parity.png (the
scoreboard screenshot) as assets/parity.png without a second copy in the repository. An unknown command fails the
build."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"<!-- kbtool-help: ([a-z0-9 -]+?) -->")
SCREENSHOT = os.path.join(ROOT, "reports", "parity.png")


def help_text(words):
    """`kbtool WORDS --help` as a user sees it at 80 columns."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import click

    from kbtool.cli import main

    ctx = click.Context(main, info_name="kbtool", terminal_width=80, max_content_width=80)
    command = main
    for word in words:
        found = command.get_command(ctx, word) if isinstance(command, click.Group) else None
        if found is None:
            raise ValueError(f"kbtool-help marker: no command `kbtool {' '.join(words)}`")
        command = found
        ctx = click.Context(command, info_name=word, parent=ctx)
    return command.get_help(ctx)


def on_page_markdown(markdown, page, config, files):
    def fill(match):
        words = match.group(1).split()
        return "### kbtool {}\n\n```text\n$ kbtool {} --help\n{}\n```".format(
            " ".join(words), " ".join(words), help_text(words)
        )

    return MARKER.sub(fill, markdown)


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, "assets/parity.png", abs_src_path=SCREENSHOT))
    return files
