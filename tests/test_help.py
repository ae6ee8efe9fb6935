"""`--help` answers: every option of every command has help text, every command's help has an `Examples` block,
and every example line that runs kbtool parses against the real command tree (a renamed flag breaks this test)."""

import shlex
import warnings

import click
import pytest

from kbtool import vocabulary
from kbtool.cli import main

SHELL_OPERATORS = ("|", "||", "&&", ";", ">", ">>", "<", "2>", "&")


def subcommand(group, name):
    """The group's command `name` (kbtool's group loads its commands from a table when first asked)."""
    return group.get_command(click.Context(group), name)


def walk(command, path):
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            yield from walk(subcommand(command, name), path + (name,))


COMMANDS = list(walk(main, ("kbtool",)))
IDS = [" ".join(path) for path, _ in COMMANDS]


def help_text(path, command, width=80):
    """The help a user sees for `path --help`, at `width` columns."""
    ctx = click.Context(main, info_name="kbtool", terminal_width=width)
    for name in path[1:]:
        ctx = click.Context(subcommand(ctx.command, name), info_name=name, parent=ctx)
    return command.get_help(ctx)


def example_lines(text):
    """The lines of a help text that run kbtool, as argument lists (shell operators and what follows cut off)."""
    found = []
    for line in text.splitlines():
        if not line.strip().startswith("kbtool "):
            continue
        words = shlex.split(line.strip(), comments=True)
        cut = next((i for i, word in enumerate(words) if word in SHELL_OPERATORS), len(words))
        found.append(words[1:cut])
    return found


def parse(args):
    """Parse args as `kbtool ARGS` would, down to the last subcommand, without running it: an unknown command or
    option, an option without its value, a missing or an extra argument raises UsageError. (Click's resilient
    parsing alone swallows those; it is used here only so that value checks, such as --known's file, do not run.)"""
    command, name, rest, parent = main, "kbtool", list(args), None
    while True:
        strict = command.context_class(command, info_name=name, parent=parent, **command.context_settings)
        command.make_parser(strict).parse_args(list(rest))
        ctx = command.make_context(name, list(rest), parent=parent, resilient_parsing=True)
        if not isinstance(command, click.Group):
            break
        with warnings.catch_warnings():  # click 8.2+ deprecates protected_args (9.0 keeps them in args)
            warnings.simplefilter("ignore", DeprecationWarning)
            rest = list(ctx.protected_args) + list(ctx.args)
        if not rest:
            return ctx
        sub_name, sub, rest = command.resolve_command(ctx, rest)
        if sub is None:  # resilient parsing lets an unknown command through
            raise click.UsageError(f"no such command {sub_name!r} under {ctx.command_path}")
        command, name, parent = sub, sub_name, ctx
    if ctx.args:
        raise click.UsageError(f"unexpected extra arguments {ctx.args}")
    missing = [
        param.name
        for param in command.params
        if isinstance(param, click.Argument) and param.required and ctx.params.get(param.name) in (None, ())
    ]
    if missing:
        raise click.UsageError(f"missing arguments {missing}")
    return ctx


@pytest.mark.parametrize("path, command", COMMANDS, ids=IDS)
def test_every_option_has_help(path, command):
    missing = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and param.name != "help" and not (param.help or "").strip()
    ]
    assert missing == [], f"{' '.join(path)}: options without help: {missing}"


@pytest.mark.parametrize("path, command", COMMANDS, ids=IDS)
def test_every_command_has_examples_that_parse(path, command):
    text = help_text(path, command)
    assert "Example" in text, f"{' '.join(path)} --help has no Examples block"
    examples = example_lines(text)
    if path != ("kbtool", "completion"):  # its examples are shell lines that eval kbtool's output
        assert examples, f"{' '.join(path)} --help has no example line that starts with `kbtool `"
    for args in examples:
        try:
            ctx = parse(args)
        except click.UsageError as exc:
            pytest.fail(f"{' '.join(path)} --help: `kbtool {shlex.join(args)}` does not parse: {exc.format_message()}")
        assert ctx.command_path, args


@pytest.mark.parametrize("path, command", COMMANDS, ids=IDS)
def test_help_fits_80_columns(path, command):
    wide = [line for line in help_text(path, command).splitlines() if len(line) > 80]
    assert wide == [], f"{' '.join(path)} --help at 80 columns: {wide}"


def test_top_level_help_truncates_no_summary():
    text = help_text(("kbtool",), main)
    commands = text.split("Commands:", 1)[1]
    assert "..." not in commands, commands
    assert len(commands.strip().splitlines()) == len(main.list_commands(click.Context(main)))


def test_the_parser_catches_a_renamed_flag_and_an_unknown_command():
    """The check above can fail: a flag no command has, and a command no group has, are usage errors."""
    parse(["check", "--op", "batch_dot", "--backend", "numpy"])
    with pytest.raises(click.UsageError):
        parse(["check", "--ops", "batch_dot"])
    with pytest.raises(click.UsageError):
        parse(["report", "rendr", "all.json"])
    with pytest.raises(click.UsageError):
        parse(["check", "--op"])  # an option without its value
    with pytest.raises(click.UsageError):
        parse(["report", "diff", "old.json"])  # a missing argument
    with pytest.raises(click.UsageError):
        parse(["known", "record", "a.json", "b.json"])  # an extra one
    assert example_lines("  kbtool check --op dot | tee out  # a comment\n  pip install x") == [
        ["check", "--op", "dot"]
    ]


def test_config_set_lists_every_key():
    text = help_text(("kbtool", "config", "set"), subcommand(subcommand(main, "config"), "set"))
    for key in vocabulary.KEYS:
        assert f"  {key} " in text, key
    for key, choices in vocabulary.CHOICES.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(key + " "))
        assert all(choice in line for choice in choices), (key, line)


def test_spec_help_names_the_shipped_default_not_a_checkout_path():
    text = help_text(("kbtool", "spec", "show"), subcommand(subcommand(main, "spec"), "show"))
    assert "default: specs/ops.yaml" not in " ".join(text.split())
    assert "kbtool/_specs/" in text
