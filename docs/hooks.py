"""mkdocs hook (mkdocs.yml `hooks:`): fails the build when a command page's committed --help (the block under each
`<!-- kbtool-help: COMMAND -->` marker, written by scripts/sync-command-help.py) differs from the CLI's, or names no
command, so the pages never drift from the CLI; and publishes reports/parity.png (the scoreboard screenshot) as
assets/parity.png without a second copy in the repository. Pages link the screenshot where it lies in the repository
(`../reports/parity.png`, which GitHub shows); the site gets the published copy's path."""

import importlib.util
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCREENSHOT = os.path.join(ROOT, "reports", "parity.png")
SCREENSHOT_LINK = re.compile(r"\]\((?:\.\./)+reports/parity\.png\)")
_HELPS = {}  # each command's help, rendered once per build


def _sync():
    """scripts/sync-command-help.py, the one renderer of the help blocks."""
    spec = importlib.util.spec_from_file_location(
        "sync_command_help", os.path.join(ROOT, "scripts", "sync-command-help.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNC = _sync()


def on_page_markdown(markdown, page, config, files):
    from mkdocs.exceptions import PluginError  # mkdocs prints its message as one line and exits 1

    try:
        fresh = SYNC.synced(markdown, _HELPS)
    except ValueError as exc:
        raise PluginError(f"docs/{page.file.src_path}: {exc}") from None
    if fresh != markdown:
        raise PluginError(f"docs/{page.file.src_path}: its --help blocks differ from the CLI's: run `{SYNC.FIX}`")
    published = "../" * page.file.src_path.count("/") + "assets/parity.png"
    return SCREENSHOT_LINK.sub(f"]({published})", markdown)


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, "assets/parity.png", abs_src_path=SCREENSHOT))
    return files
