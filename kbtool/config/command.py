"""The `kbtool config` commands, which read and edit keras.json as the Keras docs describe it (the work is in
keras_json.py)."""

import json
import os
import sys

import click

from kbtool import options
from kbtool.errors import KbtoolError


@click.group()
def config() -> None:
    """Read and edit keras.json as the Keras docs describe it.

    \b
    Examples:
      kbtool config show
      kbtool config set floatx float64
    """


@config.command("path")
@click.option("--json", "as_json", is_flag=True, help="Print the path and whether it exists as JSON.")
def config_path(as_json: bool) -> None:
    """Print where keras.json lives.

    That is $KERAS_HOME/keras.json, else ~/.keras/keras.json.

    \b
    Examples:
      kbtool config path
      kbtool config path --json
    """
    from kbtool.config import keras_json as cfg

    path = cfg.config_path()
    click.echo(json.dumps({"path": path, "exists": os.path.isfile(path)}) if as_json else path)


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the settings and their sources as JSON.")
def config_show(as_json: bool) -> None:
    """Show the effective settings and where each comes from.

    \b
    Examples:
      kbtool config show
      kbtool config show --json
    """
    from kbtool.config import keras_json as cfg

    settings = cfg.effective()
    if as_json:
        click.echo(
            json.dumps({"path": cfg.config_path(), "settings": {k: s.as_dict() for k, s in settings.items()}}, indent=2)
        )
        return
    click.echo(f"# {cfg.config_path()}")
    width = max(len(k) for k in settings)
    for key, setting in settings.items():
        click.echo("{:<{w}}  {!s:<16}  ({})".format(key, json.dumps(setting.value), setting.source, w=width))


@config.command("get")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: the value and where it comes from.")
def config_get(key: str, as_json: bool) -> None:
    """Print one effective setting.

    KEY is image_data_format, epsilon, floatx or backend.

    \b
    Examples:
      kbtool config get floatx
      kbtool config get backend --json
    """
    from kbtool.config import keras_json as cfg

    settings = cfg.effective()
    if key not in settings:
        raise KbtoolError("unknown key {!r}; keys are {}".format(key, ", ".join(settings)))
    if as_json:
        click.echo(json.dumps(dict(settings[key].as_dict(), key=key)))
        return
    value = settings[key].value
    text = value if isinstance(value, str) else json.dumps(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from keras.json ("\ud800") cannot be printed; JSON escapes it
        text = json.dumps(value)
    click.echo(text)


@config.command("set", context_settings={"ignore_unknown_options": True})  # so `set epsilon -1` reaches validation
@click.argument("key")
@click.argument("value")
@click.option("--force", is_flag=True, help="Replace an unreadable keras.json (the old file is kept as a backup).")
@options.IMPORT_TIMEOUT
def config_set(key: str, value: str, force: bool, timeout: float) -> None:
    """Set KEY to VALUE in keras.json.

    The value is checked first; the file is written atomically and keeps its other keys.

    \b
    Keys (documented default; choices):
      image_data_format  channels_last; channels_last, channels_first
      epsilon            1e-07; a number above 0
      floatx             float32; float16, float32, float64
      backend            tensorflow; a backend name or a module path

    \b
    Examples:
      kbtool config set floatx float64
      kbtool config set image_data_format channels_first
      kbtool config set backend my_package.my_module --timeout 30
    """
    from kbtool.config import keras_json as cfg

    for note in cfg.set_value(key, value, force=force, timeout=timeout):
        click.echo(note, err=True)
    click.echo(f"{key} = {value}")


@config.command("validate")
@click.option("--json", "as_json", is_flag=True, help="Print the path, whether it is valid and the problems as JSON.")
@options.IMPORT_TIMEOUT
def config_validate(as_json: bool, timeout: float) -> None:
    """Check keras.json and KERAS_BACKEND.

    Exit code 1 when something is invalid, 2 when a custom backend module could not be checked (it exits,
    crashes or hangs while importing).

    \b
    Examples:
      kbtool config validate
      kbtool config validate --json
    """
    from kbtool.config import keras_json as cfg

    problems = cfg.validate(timeout=timeout)
    if as_json:
        click.echo(json.dumps({"path": cfg.config_path(), "valid": not problems, "problems": problems}, indent=2))
        sys.exit(1 if problems else 0)
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        sys.exit(1)
    click.echo(f"{cfg.config_path()}: valid")
