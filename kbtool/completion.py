"""The `kbtool completion` command, which prints the shell's completion script. The completers of op, backend and
environment names that the script calls on each Tab are kbtool/options.py's, beside the flags they complete."""

import click
from click.shell_completion import get_completion_class


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
