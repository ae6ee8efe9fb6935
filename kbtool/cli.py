"""kbtool's command line, the click group and a table of its commands loaded lazily.

Each product owns its command beside its logic (`kbtool/check/command.py`, `kbtool/reports/command.py`, ...); this
module names them in COMMANDS and imports one only when it is asked for (click's documented lazy group), so that
`kbtool check` imports check's command alone, `kbtool --help` none, and nothing here imports numpy or a backend."""

import importlib
import os
import sys
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import click
from click.utils import make_default_short_help

from kbtool import interrupts
from kbtool.errors import KbtoolError

# the docs online (pyproject's Documentation URL; tests/test_docs_pages.py keeps the two one): pip installs no docs/
DOCS_URL = "https://github.com/kbtool/kbtool/tree/main/docs"


def docs_pointer(package: str = os.path.dirname(os.path.abspath(__file__))) -> str:
    """Where `kbtool --help` sends a reader: the docs online, and the local index as well when kbtool (the folder
    `package`) runs from a source checkout (a pip install has no docs/ beside the package)."""
    checkout = os.path.dirname(package)
    index = os.path.join(checkout, "docs", "index.md")
    if os.path.isfile(index) and os.path.isfile(os.path.join(checkout, "mkdocs.yml")):
        return f"Docs: {DOCS_URL}; in this checkout: {index} (`make docs` builds the site)."
    return f"Docs: {DOCS_URL}"


class LazyCommand(NamedTuple):
    """A command of the table: where it lives ("module:attribute") and its one-line summary for `kbtool --help`
    (the first line of its docstring, kept here so that listing the commands imports none of them;
    tests/test_cli.py checks that the two agree)."""

    target: str
    summary: str


# the commands, listed by name in `kbtool --help`
COMMANDS: Dict[str, LazyCommand] = {
    "backends": LazyCommand("kbtool.runners.command:backends", "Show each backend's status, interpreter and versions."),
    "bench": LazyCommand("kbtool.bench.command:bench", "Time each op on each backend."),
    "bisect": LazyCommand("kbtool.bisect.command:bisect", "Find the release of a package where a result changed."),
    "check": LazyCommand("kbtool.check.command:check", "Check ops on backends against the NumPy reference."),
    "completion": LazyCommand("kbtool.completion:completion", "Print the shell completion script."),
    "config": LazyCommand("kbtool.config.command:config", "Read and edit keras.json as the Keras docs describe it."),
    "env": LazyCommand("kbtool.runners.command:env", "Manage the backends' environments (one venv each)."),
    "explore": LazyCommand("kbtool.explore.command:explore", "Search one op's inputs for differences (Hypothesis)."),
    "known": LazyCommand(
        "kbtool.known.command:known", "Known differences: list them, show one, record them from a run."
    ),
    "models": LazyCommand("kbtool.models.command:models", "Compare whole Keras models across engines, layer by layer."),
    "report": LazyCommand("kbtool.reports.command:report", "Render, merge and compare JSON reports."),
    "spec": LazyCommand("kbtool.specs.command:spec", "Inspect and validate the spec (ops.yaml)."),
}


def load_command(target: str) -> click.Command:
    """The click command a table entry names ("module:attribute"), its module imported now."""
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
        raise TypeError(f"{target} is not a click command")
    return command


class Group(click.Group):
    """Loads its commands from a table when first asked for, and turns KbtoolError and a subcommand's usage error
    (a bad flag value) into one line on stderr and exit code 2 (never a traceback), and a Ctrl-C outside `check`'s
    own handling into exit 130."""

    def __init__(self, *args: Any, lazy_commands: Optional[Mapping[str, LazyCommand]] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: Dict[str, LazyCommand] = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(self.commands) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(load_command(self.lazy_commands[cmd_name].target), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: List[str]
    ) -> Tuple[Optional[str], Optional[click.Command], List[str]]:
        if args and args[0] not in self.list_commands(ctx):
            # not a command: click's error names the close matches among the commands loaded, so load them all
            for name in self.list_commands(ctx):
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, each summary from the table for a command not loaded yet (none is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                rows.append((name, make_default_short_help(self.lazy_commands[name].summary, limit)))
            elif not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbtoolError as exc:
            click.echo(f"kbtool: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = (
                exc.ctx.command_path
                if exc.ctx is not None
                else " ".join(filter(None, [ctx.command_path, ctx.invoked_subcommand]))
            )
            click.echo(
                "kbtool: error: {} (see `{} -h`)".format(" ".join(exc.format_message().split()), where), err=True
            )
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("kbtool: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            # what the machine refuses where no command expected it (no file can be written at all, as on a full
            # disk: Python's tempfile finds no usable folder) is the machine's state, not a bug to show a traceback
            # for; a command that can say more catches it itself
            click.echo(f"kbtool: error: {os_error(exc)}", err=True)
            sys.exit(2)


def os_error(exc: OSError) -> str:
    """An OSError in one line: what failed, and on which file where the error names one."""
    from kbtool.files import clip  # (not at import: `kbtool --help` loads no YAML)

    what = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    return clip(f"{what}: {where}" if where is not None else what, 300)


@click.group(cls=Group, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kbtool")
def main() -> None:
    """Check the Keras backend API on every backend.

    It runs each documented K.* function on every installed backend and compares values, shapes, dtypes and
    errors with a NumPy reference.

    DOCS

    \b
    Examples:
      kbtool backends
      kbtool check --op batch_dot
      kbtool check --help
    """


main.help = (main.help or "").replace("DOCS", docs_pointer())  # where the docs are depends on the install


def run() -> None:
    """The `kbtool` command and `python -m kbtool`: `main` in a process that ends with the command."""
    interrupts.OWNS_PROCESS = True
    main(prog_name="kbtool")


if __name__ == "__main__":  # pragma: no cover
    main()
