"""Shell completion of op, backend and environment names (click's completion protocol), and the command that
prints the shell's script (`kbtool completion bash|zsh|fish`). The command modules take their completers from here.

Completion runs on every Tab press, so it reads the op names with a line scan of the spec instead of loading it
(about 3 ms instead of 1.3 s) and never raises: a completion that fails offers nothing."""

import re
from typing import List, Optional

import click
from click.shell_completion import CompletionItem, get_completion_class

_OP_KEY = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*):")
_TOP_KEY = re.compile(r"^[A-Za-z_]")


def spec_op_names(path: Optional[str] = None) -> List[str]:
    """The op names of the spec (the keys under its top-level `ops:`), in file order.

    The file is read with the loader's guards (files.read_text: a regular file only, opened without blocking, at
    most files.MAX_FILE_BYTES, UTF-8): /dev/zero, a FIFO or a huge file is a KbtoolError, never a hang."""
    from kbtool import files, paths

    names: List[str] = []
    inside = False
    text = files.read_text(path or paths.spec_file(), "spec ") or ""  # never None: not missing_ok
    for line in text.splitlines():
        if _TOP_KEY.match(line):
            inside = line.startswith("ops:")
        elif inside:
            match = _OP_KEY.match(line)
            if match:
                names.append(match.group(1))
    return names


def _spec_path(ctx: Optional[click.Context]) -> Optional[str]:
    while ctx is not None:
        if ctx.params.get("spec_path"):
            return str(ctx.params["spec_path"])
        ctx = ctx.parent
    return None


def complete_op(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    try:
        names = spec_op_names(_spec_path(ctx))
    except Exception:  # an unreadable or hostile --spec: nothing to offer
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_backend(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    """Built-in backends, and the configured one (it may be a custom module)."""
    try:
        from kbtool.config import keras_json as config
        from kbtool.runners.registry import BUILTIN

        names = list(BUILTIN) + _installed_releases()
        configured = config.effective()["backend"].value
        if isinstance(configured, str) and configured not in names:
            names.append(configured)
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_environment(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    try:
        from kbtool.runners.registry import RECIPES
    except Exception:
        return []
    return [CompletionItem(n) for n in list(RECIPES) + _installed_releases() if n.startswith(incomplete)]


def _installed_releases() -> List[str]:
    """The release backends installed under kbtool's home (`tensorflow1[keras=2.2.4]`); none when it cannot be read."""
    try:
        from kbtool.runners import releases

        return [r.name for r in releases.installed()]
    except Exception:
        return []


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script.

    Op, backend and environment names complete too.

    \b
    Examples:
    bash:  eval "$(kbtool completion bash)"    (or add that line to ~/.bashrc)
    zsh:   eval "$(kbtool completion zsh)"     (in ~/.zshrc)
    fish:  kbtool completion fish > ~/.config/fish/completions/kbtool.fish
    """
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click.Choice lets only these three through
        raise click.UsageError(f"no completion for {shell}")
    root = click.get_current_context().find_root().command  # the kbtool group the script completes
    click.echo(cls(root, {}, "kbtool", "_KBTOOL_COMPLETE").source())
