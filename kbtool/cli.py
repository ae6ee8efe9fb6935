"""kbtool's command line: a thin click layer. Heavy modules are imported inside commands only,
so `kbtool --help` stays fast (no numpy, no backend)."""

import json
import os
import sys

import click

from kbtool import options
from kbtool.completion import complete_backend, complete_environment, complete_op
from kbtool.errors import KbtoolError
from kbtool.vocabulary import MODES


class Group(click.Group):
    """Turns KbtoolError and a subcommand's usage error (a bad flag value) into one line on stderr and exit code 2
    (never a traceback), and a Ctrl-C outside `check`'s own handling into exit 130."""

    def invoke(self, ctx):
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


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kbtool")
def main():
    """Check the Keras backend API on every backend.

    It runs each documented K.* function on every installed backend and compares values, shapes, dtypes and
    errors with a NumPy reference. Docs: docs/index.md (`make docs` builds the site).

    \b
    Examples:
      kbtool backends
      kbtool check --op batch_dot
      kbtool check --help
    """


def run():
    """The `kbtool` command and `python -m kbtool`: `main` in a process that ends with the command."""
    from kbtool import interrupts

    interrupts.OWNS_PROCESS = True
    main(prog_name="kbtool")


# ---------------------------------------------------------------------------- config
@main.group()
def config():
    """Read and edit keras.json as the Keras docs describe it.

    \b
    Examples:
      kbtool config show
      kbtool config set floatx float64
    """


@config.command("path")
@click.option("--json", "as_json", is_flag=True, help="Print the path and whether it exists as JSON.")
def config_path(as_json):
    """Print where keras.json lives.

    That is $KERAS_HOME/keras.json, else ~/.keras/keras.json.

    \b
    Examples:
      kbtool config path
      kbtool config path --json
    """
    import os

    from kbtool.config import keras_json as cfg

    path = cfg.config_path()
    click.echo(json.dumps({"path": path, "exists": os.path.isfile(path)}) if as_json else path)


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the settings and their sources as JSON.")
def config_show(as_json):
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
def config_get(key, as_json):
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
def config_set(key, value, force, timeout):
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
def config_validate(as_json, timeout):
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


# ---------------------------------------------------------------------------- spec
@main.group()
def spec():
    """Inspect and validate the spec (ops.yaml).

    \b
    Examples:
      kbtool spec list
      kbtool spec show batch_dot
      kbtool spec validate
    """


def _load_spec(path=None):
    from kbtool.specs import loader

    return loader.load(path)


@spec.command("list")
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON: one object per op.")
def spec_list(spec_path, as_json):
    """List every op with its category and case counts.

    \b
    Examples:
      kbtool spec list
      kbtool spec list --json
    """
    from kbtool.specs.domains import grid_cases

    s = _load_spec(spec_path)
    rows = [
        {
            "op": name,
            "category": e["category"],
            "alias_of": e.get("alias_of"),
            "documented_in": e["documented_in"],
            "cases": len(e.get("cases", [])),
            "grid_cases": len(grid_cases(s, name)),
            "examples": len(e.get("examples", [])),
        }
        for name, e in sorted(s.ops.items())
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        alias = " (alias of {})".format(row["alias_of"]) if row["alias_of"] else ""
        click.echo(
            "{:<32} {:<10} cases={:<3} grid={:<3} examples={:<2} docs={}{}".format(
                row["op"],
                row["category"],
                row["cases"],
                row["grid_cases"],
                row["examples"],
                ",".join(row["documented_in"]),
                alias,
            )
        )
    click.echo(f"{len(rows)} functions")


@spec.command("show")
@click.argument("op", shell_complete=complete_op)
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="The entry as JSON instead of YAML.")
def spec_show(op, spec_path, as_json):
    """Show one op's spec entry as YAML.

    \b
    Examples:
      kbtool spec show batch_dot
      kbtool spec show conv2d --json
    """
    import yaml

    s = _load_spec(spec_path)
    if as_json:
        click.echo(json.dumps({op: s.op(op)}, indent=2, default=repr))
        return
    click.echo(yaml.safe_dump({op: s.op(op)}, sort_keys=False, allow_unicode=True))


@spec.command("coverage")
@click.option("--op", "ops", multiple=True, help="Only this op (repeatable).", shell_complete=complete_op)
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Print what is unexercised (or the blind spots) as JSON.")
@click.option(
    "--backend",
    metavar="NAME",
    help="Blind spots of this backend: documented values and pairs exercised only by results that do not pass on "
    "it (by default the known-differences file's recorded results).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="With --backend: the failing results are this JSON report's non-passing results for the backend.",
)
@options.KNOWN
def spec_coverage(ops, spec_path, as_json, backend, report_path, known_path):
    """List documented values that no case exercises.

    The documented parameter space is each value and each pair of values. Exit code 1 when something is unexercised. With --backend: what only results that do not pass on the backend
    exercise, per mode (blind spots), each `unsupported` (the backend lacks the function or the mode), `refused`
    (every call with the value raises) or real; exit code 1 when a real one is left.

    \b
    Examples:
      kbtool spec coverage --op conv2d
      kbtool spec coverage --backend cntk --json
      kbtool spec coverage --backend theano --report full.json
    """
    from kbtool.specs import coverage

    if (report_path or known_path) and not backend:
        raise KbtoolError("--report and --known need --backend")
    s = _load_spec(spec_path)
    for op in ops:
        s.op(op)
    if backend:
        from kbtool.reports import blind_spots
        from kbtool.reports.load import read_report

        blind_spots.backend_modes(backend)  # an unknown backend is bad input before any file is read
        report = read_report(report_path) if report_path else None
        found = blind_spots.blind_spots(s, backend, report, report_path, known_path, ops or None)
        if as_json:
            click.echo(json.dumps(found, indent=2))
        else:
            for line in coverage.render_blind_spots(found):
                click.echo(line)
        sys.exit(1 if found["real"] else 0)
    report = coverage.coverage(s, ops or None)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for line in coverage.render(report):
            click.echo(line)
    sys.exit(1 if report["unexercised"] else 0)


@spec.command("validate")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the path, whether it is valid and the problems as JSON.")
def spec_validate(file, as_json):
    """Validate a spec file (default: the shipped spec).

    Every problem is printed as file:line: path: message; exit code 1 when there is one.

    \b
    Examples:
      kbtool spec validate
      kbtool spec validate specs/ops.yaml --json
    """
    from kbtool import paths
    from kbtool.specs import loader

    try:
        s = loader.load(file)
    except loader.SpecError as exc:
        if as_json:
            click.echo(
                json.dumps(
                    {"path": file or paths.spec_file(), "valid": False, "problems": list(exc.problems)}, indent=2
                )
            )
        else:
            for problem in exc.problems:
                click.echo(problem, err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"path": s.path, "valid": True, "ops": len(s.ops), "problems": []}, indent=2))
        return
    click.echo(f"{s.path}: valid ({len(s.ops)} ops)")


_MAP = click.option(
    "--map",
    "map_path",
    type=click.Path(dir_okay=False),
    help="The K.* -> Keras 3 map (default: keras3_map.yaml beside the shipped spec).",
)


def _load_map(map_path, spec_path=None):
    from kbtool.specs import keras3_map

    return keras3_map.load(map_path, list(_load_spec(spec_path).ops))


@spec.command("map")
@click.option("--op", "ops", multiple=True, help="Only this function (repeatable).", shell_complete=complete_op)
@_MAP
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def spec_map(ops, map_path, spec_path, as_json):
    """Print the K.* -> Keras 3 map.

    Each function's Keras 3 expression and note, or why there is none.

    \b
    Examples:
      kbtool spec map --op batch_dot
      kbtool spec map --json
    """
    from kbtool.reports.text import cell

    keras3_map = _load_map(map_path, spec_path)
    s = _load_spec(spec_path)
    for op in ops:
        s.op(op)  # an unknown function: one line, with the closest names
    rows = [row for row in keras3_map.rows if not ops or row.op in ops]
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        for row in rows:
            home = row.keras3 if row.keras3 is not None else "no equivalent: " + (row.none or "")
            click.echo("\t".join([row.op, cell(home), cell(row.note or "")]))
        return
    from rich.table import Table
    from rich.text import Text

    table = Table("function", "Keras 3", "note", show_lines=True)
    for row in rows:
        if row.keras3 is not None:
            home = Text(cell(row.keras3), style="cyan")
        else:
            home = Text("no equivalent: " + cell(row.none or ""), style="yellow")
        table.add_row(Text("K." + row.op), home, Text(cell(row.note or "")))
    console.print(table)
    with_expression = sum(1 for row in rows if row.keras3 is not None)
    console.print(
        Text(
            f"{len(rows)} functions: {with_expression} with a Keras 3 expression, "
            f"{len(rows) - with_expression} with none (keras {keras3_map.keras})"
        )
    )


# ---------------------------------------------------------------------------- env / backends
@main.group()
def env():
    """Manage the backends' environments (one venv each).

    Each backend runs in its own venv, built from its recipe and its lock.

    \b
    Examples:
      kbtool env list
      kbtool env install theano
      kbtool env install --all
    """


def _recipes(names, all_):
    from kbtool.runners import releases
    from kbtool.runners.registry import RECIPES

    if all_:
        return list(RECIPES.values())
    if not names:
        raise KbtoolError("name one or more of {} (or --all)".format(", ".join(RECIPES)))
    unknown = [n for n in names if n not in RECIPES and not releases.is_release(n)]
    if unknown:
        raise KbtoolError(
            "unknown environment {}; managed environments: {} (or a release of one, e.g. "
            "'tensorflow1[keras=2.2.4]')".format(", ".join(unknown), ", ".join(RECIPES))
        )
    return [releases.recipe_for(n) for n in names]


@env.command("install")
@click.argument("names", nargs=-1, shell_complete=complete_environment)
@click.option(
    "--all", "all_", is_flag=True, help="Install every managed backend (skipping those whose Python is missing)."
)
@click.option("--force", is_flag=True, help="Delete and rebuild the environment.")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Build the env from this interpreter (it must be the backend's Python version, e.g. 3.6 for cntk); "
    "default: the first found in KBTOOL_PYTHON_X_Y, pyenv, uv, conda, then PATH.",
)
@click.option(
    "--no-deps",
    "no_deps",
    is_flag=True,
    help="For a release whose requirements pip cannot resolve with its base env: install its pinned packages "
    "alone over the base env (requirements unchecked; the unmet ones are recorded, and reinstalls do the same).",
)
def env_install(names, all_, force, python, no_deps):
    """Create or update backend environments.

    Each env gets exactly the versions its lock pins. Each env is a venv made from a Python of its recipe's version: `--python PATH`, else KBTOOL_PYTHON_3_6-style
    variables, kbtool's own Python, pyenv's versions, uv's Pythons, conda envs, then pythonX.Y on PATH. On a
    terminal pip's own output shows while it runs; otherwise only a failing command's last line is said.
    A release of a backend (`'tensorflow1[keras=2.2.4]'`) gets its own env layered on the base env, with a
    lock its first install writes under kbtool's home (docs/concepts/releases.md).

    \b
    Exit codes:
      0  every env asked is installed; with --all, also when the only ones
         left out lack their Python (each named on a `skipped:` line with
         the ways to get one) or use an interpreter from `kbtool env use`
      2  an env failed to install, a named backend's Python is missing,
         or bad input (unknown name, --python not that backend's Python)
      130  interrupted

    \b
    Examples:
      kbtool env install tensorflow theano
      kbtool env install --all
      kbtool env install tensorflow --force
      kbtool env install cntk --python ~/.pyenv/versions/3.6.15/bin/python
      kbtool env install 'tensorflow1[keras=2.2.4]' 'tensorflow1[keras=2.2.5]'
      kbtool env install 'tensorflow1[keras=2.2.0]' --no-deps
    """
    from kbtool.runners import envs
    from kbtool.runners.envs import interpreters

    recipes = _recipes(names, all_)
    if no_deps and (all_ or any(r.release is None for r in recipes)):
        raise KbtoolError("--no-deps is for releases only, e.g. 'tensorflow1[keras=2.2.0]'; name releases, not --all")
    interpreter = None
    if python:
        if all_:
            raise KbtoolError("--python names one interpreter: name the backends it builds, not --all")
        from kbtool.runners.registry import RECIPES

        owners = [RECIPES.get(r.env_owner, r) for r in recipes]
        versions = sorted({o.python_version for o in owners})
        if len(versions) > 1:
            raise KbtoolError(
                "--python names one interpreter, and these backends need different Pythons ({}): install them "
                "one Python version at a time".format(
                    ", ".join(f"{r.name} {o.python_version}" for r, o in zip(recipes, owners))
                )
            )
        try:
            interpreter = interpreters.find(versions[0], python=python, backend=" and ".join(r.name for r in recipes))
        except interpreters.WrongInterpreter as exc:
            raise KbtoolError(str(exc))
    failed = envs.install_all(
        recipes,
        force,
        out=click.echo,
        err=lambda line: click.echo(line, err=True),
        skip_registered=all_,
        interpreter=interpreter,
        skip_missing=all_,
        terminal=envs.live_terminal(sys.stderr),
        no_deps=no_deps,
    )
    if failed:
        sys.exit(2)


@env.command("use")
@click.argument("name", shell_complete=complete_environment)
@click.option(
    "--python",
    "python",
    required=True,
    metavar="PATH",
    help="An interpreter that already has the backend's packages (a conda env, a GPU machine's Python).",
)
@click.option("--force", is_flag=True, help="Replace a registration, or delete the venv kbtool built for NAME.")
def env_use(name, python, force):
    """Run backend NAME on an interpreter you already have.

    No venv is built for NAME. The interpreter must import the backend (checked now; its versions are
    recorded). kbtool installs nothing into it; `kbtool env remove NAME` drops the registration and leaves the
    interpreter alone.

    \b
    Examples:
      kbtool env use keras3-jax --python /opt/conda/envs/jax/bin/python
      kbtool env use keras3-torch --python /usr/bin/python3 --force
    """
    from kbtool.runners import envs

    (recipe,) = _recipes((name,), False)
    record = envs.use(recipe, python, force=force, log=lambda line: click.echo(f"kbtool: {line}", err=True))
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    shared = "" if recipe.env_owner == recipe.name else f" (the {recipe.env_owner} env, which {recipe.name} runs in)"
    click.echo(f"{recipe.name}: uses {record['python']} (Python {record['python_version']}: {versions}){shared}")


@env.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the environments as JSON: one object each.")
def env_list(as_json):
    """List the environments and whether they are installed.

    Exit code 2 when one is broken (the reason follows the list).

    \b
    Examples:
      kbtool env list
      kbtool env list --json
    """
    from kbtool.runners import envs, releases
    from kbtool.runners.registry import RECIPES

    recipes = list(RECIPES.values()) + [releases.recipe(r) for r in releases.installed()]
    infos = [envs.describe(r) for r in recipes]
    if as_json:
        click.echo(json.dumps(infos, indent=2))
    else:
        width = max(len(info["name"]) for info in infos)  # the names line up, keras3-tensorflow's too
        for info in infos:
            if info.get("problem"):
                state = "broken (see the error below)"
            elif info.get("external"):
                state = "uses {} (Python {})".format(info["python"], info.get("python_reports"))
            elif info["installed"]:
                state = "installed {} ({} MB)".format(info["created"], info["size_mb"])
            else:
                state = "not installed"
            link = " -> {}".format(info["symlink_to"]) if info.get("symlink_to") else ""
            click.echo("{:<{w}} {:<40} {}{}".format(info["name"], state, info["path"], link, w=width))
    problems = [info["problem"] for info in infos if info.get("problem")]
    for problem in problems:  # every environment is listed first; then one line per broken one
        click.echo(f"kbtool: error: {problem}", err=True)
    if problems:
        sys.exit(2)


@env.command("system-packages")
@click.argument("names", nargs=-1, shell_complete=complete_environment)
@click.option("--json", "as_json", is_flag=True, help="A JSON list.")
def env_system_packages(names, as_json):
    """Print the Debian packages the backends need.

    One per line, from the recipes: those of NAMES, or of every backend. Nothing is printed when they need none.

    \b
    Examples:
      kbtool env system-packages
      kbtool env system-packages --json
      sudo apt-get install -y $(kbtool env system-packages theano)
    """
    from kbtool.runners.registry import system_packages

    packages = system_packages([r.name for r in _recipes(names, False)] if names else None)
    if as_json:
        click.echo(json.dumps(packages))
        return
    for package in packages:
        click.echo(package)


@env.command("remove")
@click.argument("names", nargs=-1, required=True, shell_complete=complete_environment)
def env_remove(names):
    """Delete backend environments.

    A symlinked environment loses the link only, never what it points to. A registered interpreter
    (`kbtool env use`) is dropped and left alone.

    \b
    Examples:
      kbtool env remove theano
      kbtool env remove cntk mxnet
      kbtool env remove 'tensorflow1[keras=2.2.4]'
    """
    from kbtool.reports.text import plural
    from kbtool.runners import envs, releases

    failed = []
    for recipe in _recipes(names, False):
        if recipe.env_owner != recipe.name:  # removing it would remove the env it shares
            click.echo(
                f"kbtool: error: {recipe.name} runs in the {recipe.env_owner} env and has none of its own: `kbtool env remove {recipe.env_owner}` removes "
                f"that env (and {recipe.name} with it)",
                err=True,
            )
            failed.append(recipe.name)
            continue
        try:
            click.echo(envs.remove(recipe))
        except KbtoolError as exc:  # the others are still removed
            click.echo(f"kbtool: error: {exc}", err=True)
            failed.append(recipe.name)
            continue
        layered = [r.name for r in releases.installed(recipe.name)] if recipe.release is None else []
        if layered:
            click.echo(
                "note: {} layered on it and will not run until it is reinstalled: {}".format(
                    plural(len(layered), "release env is", "release envs are"), ", ".join(layered)
                )
            )
    if failed:
        sys.exit(2)


@main.command()
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON list: each backend's status, versions, reason and `cached`."
)
@click.option(
    "--backend",
    "names",
    multiple=True,
    help="Also probe a custom backend module (repeatable).",
    shell_complete=complete_backend,
)
@click.option("--refresh", is_flag=True, help="Start every backend's worker again instead of reusing kept answers.")
def backends(as_json, names, refresh):
    """Show each backend's status, interpreter and versions.

    Says why a backend is unavailable; * marks the active backend (keras.json's, or KERAS_BACKEND's).

    An available backend's answer is kept (KBTOOL_HOME/probes.json) and reused while its env, interpreter and
    packages are unchanged, so a second call answers within a second; --refresh starts each worker again.
    Installed releases (`tensorflow1[keras=2.2.4]`) are counted per base, not probed: --backend NAME probes one.

    \b
    Examples:
      kbtool backends
      kbtool backends --refresh --json
      kbtool backends --backend my_package.my_module
      kbtool backends --backend 'tensorflow1[keras=2.2.4]'
    """
    import time

    from kbtool.interrupts import Interrupted, Interrupts
    from kbtool.runners.base import envs_dir
    from kbtool.runners.probe_cache import ProbeCache, probe_all, wanted_backends
    from kbtool.runners.session import Cancel, probe

    envs_dir()  # a KBTOOL_HOME or envs folder that is not a folder: one line, before any worker starts
    cache = ProbeCache()
    active, active_from = _active_backend()
    wanted = wanted_backends(names)
    cancel, infos = Cancel(), []
    live = not as_json and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
    status_shown = False

    def status(text):
        nonlocal status_shown
        if live:
            sys.stderr.write("\r\x1b[K" + text[: _width() - 1])
            sys.stderr.flush()
            status_shown = bool(text)

    try:
        with Interrupts(cancel, "no backend is reported", raise_in_main=True):
            pending = probe_all(wanted, cache, cancel, probe, refresh=refresh)
            started = time.monotonic()
            name_w = max([len("backend")] + [len(n) for n in wanted])
            if not as_json:
                click.echo(_backends_legend(active, active_from, wanted))
                click.echo(
                    "  {:<{w}} {:<13} {:<8} {}".format("backend", "status", "python", "versions, or why not", w=name_w)
                )
            told = False
            for index, (name, future) in enumerate(pending):
                while True:
                    try:
                        info = future.result(timeout=0.25)
                        break
                    except TimeoutError:
                        waiting = [n for n, f in pending[index:] if not f.done()]
                        if not live and not told and not as_json:
                            told = True
                            click.echo(f"kbtool: starting {len(waiting)} backends' workers (up to ~20 s)...", err=True)
                        status(
                            "starting {} of {} workers ({}) {:.0f} s".format(
                                len(waiting), len(wanted), ", ".join(waiting), time.monotonic() - started
                            )
                        )
                info["active"] = name == active
                infos.append(info)
                if not as_json:
                    status("")
                    for line in _backend_rows(info, name_w):
                        click.echo(line)
            status("")
    except Interrupted as stop:
        if status_shown:
            status("")
        sys.exit(128 + stop.signum)
    problem = cache.save()
    if problem:
        click.echo(f"kbtool: warning: {problem} (answers were not kept for next time)", err=True)
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    kept = sum(1 for info in infos if info.get("cached"))
    if kept:
        click.echo(f"{kept} of {len(infos)} answers kept from earlier runs (envs unchanged); --refresh asks again")
    said = _releases_line(wanted)
    if said:
        click.echo(said)


def _releases_line(wanted):
    """The installed releases `kbtool backends` did not probe, counted per base (a worker each would take minutes)."""
    import collections
    import textwrap

    from kbtool.runners import releases

    counts = collections.Counter(r.base for r in releases.installed() if r.name not in wanted)
    if not counts:
        return None
    text = "installed releases, not probed: {} (`kbtool env list` names them; --backend NAME probes one)".format(
        ", ".join(f"{base} ×{count}" for base, count in counts.items())
    )
    return textwrap.fill(text, width=max(40, _width() - 1), break_on_hyphens=False, subsequent_indent="  ")


def _width():
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _active_backend():
    """(the active backend's name, where it is set) from keras.json or KERAS_BACKEND; (None, why) when unreadable."""
    from kbtool.config import keras_json as config

    try:
        setting = config.effective()["backend"]
    except KbtoolError as exc:
        return None, f"keras.json cannot be read: {exc}"
    source = "KERAS_BACKEND" if setting.source.startswith("environment") else "keras.json"
    if not setting.source.startswith(("environment", "file")):
        source = "the documented default: no keras.json"
    return str(setting.value), source


def _backends_legend(active, active_from, wanted):
    if active is None:
        return f"active backend unknown ({active_from})"[: _width()]
    if active in wanted:
        return f"* = the active backend, {active} ({active_from})"
    return f"active backend: {active} ({active_from}), not among these"


def _backend_rows(info, name_w):
    """A backend's row, its detail wrapped under its own column so that no line is wider than the terminal."""
    import textwrap

    detail = ", ".join(f"{k} {v}" for k, v in (info.get("versions") or {}).items()) or info.get("reason", "")
    head = "{} {:<{w}} {:<13} {:<8} ".format(
        "*" if info.get("active") else " ", info["name"], info["status"], info.get("python") or "-", w=name_w
    )
    room = max(20, _width() - len(head))
    lines = textwrap.wrap(detail, room, break_on_hyphens=bool(info.get("versions"))) or [""]
    return [(head + lines[0]).rstrip()] + [" " * len(head) + line for line in lines[1:]]


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell):
    """Print the shell completion script.

    Op, backend and environment names complete too.

    \b
    Examples:
    bash:  eval "$(kbtool completion bash)"    (or add that line to ~/.bashrc)
    zsh:   eval "$(kbtool completion zsh)"     (in ~/.zshrc)
    fish:  kbtool completion fish > ~/.config/fish/completions/kbtool.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    click.echo(cls(main, {}, "kbtool", "_KBTOOL_COMPLETE").source())


# ---------------------------------------------------------------------------- check
@main.command()
@click.option(
    "--op",
    "ops",
    multiple=True,
    help="Op to check (repeatable; default: every op in the spec).",
    shell_complete=complete_op,
)
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Backend (repeatable): a built-in name (`kbtool backends` lists them) or a module path [@ENV]. "
    "Default: every installed built-in backend.",
)
@click.option(
    "--versions",
    "versions",
    metavar="PKG=LO..HI",
    help="Sweep releases: each --backend whose env has PKG becomes every release of PKG the package index has "
    "from LO to HI (e.g. --backend tensorflow1 --versions keras=2.2.4..2.3.1 runs tensorflow1[keras=2.2.4], "
    "tensorflow1[keras=2.2.5], ...), in version order; releases not installed are installed first.",
)
@click.option("--case", "case_patterns", multiple=True, help="Only cases whose id matches this glob (repeatable).")
@click.option(
    "--mode", "modes", multiple=True, type=click.Choice(MODES), help="Evaluation mode (repeatable; default: both)."
)
@click.option("--examples", is_flag=True, help="Only the documented examples: checks what each doc version shows.")
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report to stdout instead of the table.")
@click.option(
    "--output",
    "-o",
    "outputs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Also write the report: .json, .md, .html or .xml (JUnit), by extension (repeatable).",
)
@click.option(
    "--history",
    "history_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also append the run to this parity history file (JSON Lines: a line per backend; "
    "`kbtool report history FILE` draws it).",
)
@options.SPEC
@options.TIMEOUT
@options.jobs("sharing every backend's cases")
@click.option(
    "--keras-config",
    "keras_config",
    multiple=True,
    metavar="KEY=VALUE",
    help="Run every case under this keras.json setting (image_data_format, floatx, epsilon; repeatable), "
    "or `defaults`: ignore keras.json and run the documented defaults (what CI should pin).",
)
@options.KNOWN
@options.DEVICE
@options.PRECISION
@click.option(
    "--active",
    is_flag=True,
    help="Check only the active backend (KERAS_BACKEND, else keras.json's backend) against the reference.",
)
@click.option(
    "--grid",
    default="pairwise",
    show_default=True,
    type=click.Choice(["pairwise", "full"]),
    help="Cases generated from the parameters' documented domains: every pair of values, or every row.",
)
@click.option(
    "--shard",
    "shard",
    metavar="K/N",
    help="Run part K of N of the planned cases (the same parts on every machine, balanced by "
    "specs/timings.json); `kbtool report merge` joins the parts' JSON reports.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="Show only these results in the terminal (repeatable): pass, known, unsupported, fail, error, "
    "crash, timeout, could_not_start, nondeterministic, unexplained. Files, --json, summary and exit code keep all.",
)
@click.option(
    "--last-failed",
    "last_failed",
    is_flag=True,
    help="Rerun only what did not pass (and is not a known difference) in the last check.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Also exit 1 on unsupported results (even explained ones) and on known differences that grew.",
)
@options.REPEAT
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line (and errors): no progress, no summary.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="List everything: the op × backend matrix, every failure with its details, every known "
    "difference, every documentation example.",
)
def check(**flags):
    """Check ops on backends against the NumPy reference.

    Runs the spec's cases on each backend and compares values, shapes, dtypes and errors. Exit code: 0 all pass, 1 any divergence (or stale known difference, or a backend that could not start;
    with --strict also an unsupported result or a grown known difference), 2 usage/config error or a report that
    could not be written, 130/143 interrupted by SIGINT/SIGTERM (the partial report is written, marked incomplete).
    Every check's JSON report is kept as last-report.json in kbtool's home, for --last-failed.

    \b
    Examples:
      kbtool check --op batch_dot
      kbtool check --op conv2d --backend theano --mode symbolic
      kbtool check --active --op conv2d
      kbtool check --keras-config defaults -o report.html -o junit.xml
      kbtool check --known my_known.yaml --status unexplained
      kbtool check --shard 2/4 -o part2.json
      kbtool check --op dot --backend tensorflow1 --versions keras=2.2.4..2.3.1
    """
    from kbtool import keras_settings, reports
    from kbtool import shard as shard_mod
    from kbtool.check.run import run_interruptibly
    from kbtool.interrupts import Interrupts
    from kbtool.plan import make_plan
    from kbtool.reports import load as report_load
    from kbtool.reports import view
    from kbtool.reports.assemble import exit_code
    from kbtool.runners.session import Cancel

    opts = options.CheckOptions(**flags)
    shard = shard_mod.parse(opts.shard) if opts.shard is not None else None
    failed_last = report_load.last_failures(opts.seed, opts.grid, say=_note) if opts.last_failed else None
    settings = keras_settings.resolve(opts.keras_config)
    if opts.active and opts.backend_names:
        raise KbtoolError(
            f"--active checks the configured backend ({settings.active_backend}); give --active or --backend, not both"
        )
    spec = _load_spec(opts.spec_path)
    backend_names, not_run = _swept(opts)
    plan = make_plan(
        spec,
        ops=opts.ops,
        backends=(settings.active_backend,) if opts.active else backend_names,
        case_patterns=opts.case_patterns,
        modes=opts.modes,
        examples=opts.examples,
        seed=opts.seed,
        grid=opts.grid,
        keras_config=settings.override,
        shard=shard,
        last_failed=failed_last,
        device=opts.device,
        precision=opts.precision,
        not_run=not_run,
    )
    for note in plan.notes:
        _note(f"kbtool: {note}")
    if plan.shard_share is not None:
        _note(f"kbtool: {plan.shard_share.describe()}")
    keras_settings.apply(plan, settings)  # the summary's header line says which settings ran and where from
    reports.prepare_outputs(opts.outputs)
    if opts.history_path:
        from kbtool.reports import history

        history.check_target(opts.history_path)

    verbosity = opts.verbosity
    with Interrupts(Cancel(), "the partial report follows") as interrupts:
        report = run_interruptibly(
            plan,
            interrupts,
            verbosity=verbosity,
            case_timeout=opts.case_timeout,
            jobs=opts.jobs,
            known_path=opts.known_path,
            strict=opts.strict,
            repeat=opts.repeat,
            echo=_note,
        )
        report_load.save_last(report, warn=_note)
        failures = reports.write_all(report, opts.outputs, echo=_note if verbosity else None)
        if opts.history_path:
            failures += _append_history(report, opts.history_path, echo=_note if verbosity else None)
        if opts.as_json:
            click.echo(reports.render(report, "json"), nl=False)
        else:
            reports.render(view.filtered(report, opts.statuses), "terminal", verbosity=verbosity)
            if opts.statuses:
                _note(view.shown_line(report, view.filtered(report, opts.statuses), opts.statuses))
        if failures:
            _note("kbtool: error: {}".format("; ".join(failures)))
        sys.exit(interrupts.exit_code or (2 if failures else exit_code(report)))


def _append_history(report, path, echo=None):
    """check --history: the run's lines appended to the history file; [] or the failure's message (an interrupted
    run has no line: a note says so)."""
    from kbtool.reports import history

    if report.get("incomplete"):
        _note(f"kbtool: note: the run was interrupted, so nothing was added to history {path}")
        return []
    try:
        written, skipped = history.append(path, history.lines_of(report))
    except KbtoolError as exc:
        return [str(exc)]
    if echo:
        echo("appended {} line{} to history {}".format(written, "" if written == 1 else "s", path))
    return []


def _swept(opts):
    """(the backends a check runs, {release: why it did not install}): --backend as named, or under --versions each
    base that has the package replaced by its releases in the range, those not installed installed first."""
    if opts.versions is None:
        return opts.backend_names, {}
    from kbtool.runners.releases import expand_backends, install_missing

    names = expand_backends(opts.backend_names, opts.versions)
    say = _note if opts.verbosity else (lambda line: None)
    return tuple(names), install_missing(names, say)


def _emit(text, output):
    """A rendered view: to stdout, or written (atomically) to `output` and said on stderr."""
    from kbtool.files import write_atomic

    if not output:
        click.echo(text, nl=False)
        return
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise KbtoolError(f"cannot write {output}: {exc.strerror or exc}")
    click.echo(f"wrote {output}", err=True)


def _note(line):
    """A line for the user on stderr (stdout is for data: --json, the views)."""
    click.echo(line, err=True)


# ---------------------------------------------------------------------------- bisect
@main.command()
@click.option("--op", "ops", multiple=True, required=True, help="Op to run (repeatable).", shell_complete=complete_op)
@click.option("--case", "case_patterns", multiple=True, help="Only cases whose id matches this glob (repeatable).")
@click.option(
    "--backend",
    "backend",
    required=True,
    shell_complete=complete_backend,
    help="The built-in backend whose package releases are bisected (one with an env of its own, e.g. tensorflow1).",
)
@click.option(
    "--versions",
    "versions",
    required=True,
    metavar="PKG=LO..HI",
    help="The package and the range: every release the package index has from LO to HI, both on the index.",
)
@click.option(
    "--mode", "modes", multiple=True, type=click.Choice(MODES), help="Evaluation mode (repeatable; default: both)."
)
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@options.SPEC
@options.TIMEOUT
@options.jobs("the two ends run together")
@click.option(
    "--output", "-o", "output", type=click.Path(dir_okay=False), help="Also write the bisect as JSON to this file."
)
@click.option("--json", "as_json", is_flag=True, help="Print the bisect as JSON to stdout instead of the text view.")
def bisect(ops, case_patterns, backend, versions, modes, seed, spec_path, case_timeout, jobs, output, as_json):
    """Find the release of a package where a result changed.

    Runs the selection (--op, --case, --mode) on BACKEND at both ends of the range, with the package at LO and at
    HI (each release a backend of its own, `tensorflow1[keras=2.2.4]`), and compares each result's outcome: its
    status and its message's words (numbers left out) and, for a failing value, its shape and dtype. For each result
    that differs it bisects the index's releases between the ends for the first one whose outcome is no longer LO's.
    A probed release runs the whole selection once, so results share probes; release envs it lacks are installed
    (seconds for a keras release), those installed are reused. A probe whose outcome is neither end's is said
    (non-monotonic). Each change shows both sides and the command that runs each again.

    \b
    Exit codes:
      0  a result changed between the ends; each change located
      1  nothing differs between the ends
      2  bad input: unknown op or backend, a bad range, LO or HI not on
         the index, a package not in the env; or a release that failed
         to install
      130/143  interrupted by SIGINT/SIGTERM

    \b
    Examples:
      kbtool bisect --op dot --backend tensorflow1 --versions keras=2.2.4..2.3.1
      kbtool bisect --op dot --backend theano --versions theano=1.0.0..1.0.5
    """
    import time

    from kbtool import reports
    from kbtool.bisect import search as bisect_mod
    from kbtool.interrupts import Interrupts
    from kbtool.runners import releases
    from kbtool.runners.session import Cancel

    started = time.monotonic()
    package, lo, hi = releases.parse_range(versions)
    if releases.is_release(backend):
        raise KbtoolError(
            f"--backend {backend}: name the base backend ({releases.base_name(backend)}); --versions names the releases"
        )
    from kbtool.runners.registry import RECIPES

    if backend not in RECIPES:
        raise KbtoolError(
            "--backend {}: bisect runs releases of a built-in backend with an env of its own: {}".format(
                backend, ", ".join(RECIPES)
            )
        )
    releases.parse(f"{backend}[{package}={lo}]")  # the package must be one of the env's
    if output:
        reports.check_writable(output)
    with Interrupts(Cancel(), "the bisect stops here") as interrupts:
        runner = bisect_mod.CheckRunner(
            backend,
            package,
            _load_spec(spec_path),
            ops,
            case_patterns=case_patterns,
            modes=modes,
            seed=seed,
            case_timeout=case_timeout,
            jobs=jobs,
            cancel=interrupts.cancel,
            note=_note,
        )
        runner.plan([])  # an unknown op, or a case glob that matches nothing, is said before any install
        chosen = releases.expand(backend, versions)
        if len(chosen) < 2:
            raise KbtoolError(f"--versions {versions}: LO and HI name the same release; a bisect needs two")
        _note(
            "kbtool: {} releases of {} from {} to {}: {}".format(
                len(chosen), package, lo, hi, ", ".join(r.version_of(package) or "?" for r in chosen)
            )
        )
        try:
            found = bisect_mod.search([r.version_of(package) or "" for r in chosen], runner)
        except bisect_mod.Interrupted:
            sys.exit(interrupts.exit_code or 130)
    wall = time.monotonic() - started
    selection = {"ops": list(ops), "cases": list(case_patterns), "modes": list(modes)}
    doc = bisect_mod.document(found, backend, package, selection, runner.installs, wall, runner.release_name)
    if output:
        bisect_mod.write(output, doc)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        for line in bisect_mod.render(found, package, runner.installs, wall):
            click.echo(line)
    sys.exit(0 if found.changes else 1)


# ---------------------------------------------------------------------------- bench
from kbtool.bench.command import bench as _bench  # noqa: E402  (its own module: the command is long)

main.add_command(_bench)


# ---------------------------------------------------------------------------- known
@main.group("known")
def known_group():
    """Known differences: record them from a run.

    \b
    Examples:
      kbtool known record full.json
    """


@known_group.command("record")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@options.KNOWN
def known_record(report_path, known_path):
    """Record the results each known difference explains.

    Writes, for every entry of the known-differences file, the key and fingerprint of each result it explains
    in REPORT.json (`kbtool check -o REPORT.json`), and their count: from then on the entry explains exactly those
    results, each while its fingerprint holds (a known result that fails differently is `changed`).

    The file is edited in place as text (comments and layout stay) for review in the diff. A report of part of
    the spec records the op and backend pairs it ran and keeps the rest. Exit code: 0 written (or already
    current), 2 a report that cannot be recorded (interrupted, filtered by case or mode, other settings), an entry
    that is stale or dead in it, or a file that cannot be read or written.

    \b
    Examples:
      kbtool check -o full.json
      kbtool known record full.json
      kbtool known record full.json --known my_known.yaml
    """
    from kbtool import files, known, paths
    from kbtool.check.run import known_entries_for
    from kbtool.known import record as known_record
    from kbtool.reports.report import Report
    from kbtool.runners import envs

    report = Report.load(report_path)
    problem = known_record.comparable_problem(report.to_dict())
    if problem:
        raise KbtoolError(f"{report_path}: {problem}")
    path = known_path or paths.known_differences_file()
    spec = _load_spec()
    entries, _ = known_entries_for(spec, path)
    if not entries:
        raise KbtoolError(f"{path}: no known-difference entries to record")
    text = files.read_text(path)
    root, _ = files.parse_yaml(path, text)
    done = known_record.record(
        text,
        root,
        known.numbered(entries),
        report.results,
        versions=known.lookup(report.results, known.reported_versions(report.backends), envs.read_lock),
    )
    _, written = files.parse_yaml(path, done.text)
    problems = known.validate(
        written,
        spec if os.path.dirname(os.path.realpath(spec.path)) == os.path.dirname(os.path.realpath(path)) else None,
    )
    if problems:  # pragma: no cover - the record is made from validated entries
        raise KbtoolError(f"{path}: the recorded file would not load ({problems[0]}); nothing written")
    if done.text != text:
        files.write_atomic(path, done.text)
    click.echo(
        "{}: {} entries, {} results recorded; {}".format(
            path,
            done.entries,
            done.results,
            f"{len(done.changed_entries)} entries changed" if done.text != text else "already current",
        )
    )


# ---------------------------------------------------------------------------- report
@main.group("report")
def report_group():
    """Render, merge and compare JSON reports.

    A JSON report is what `kbtool check -o FILE.json` writes.

    \b
    Examples:
      kbtool report render all.json -o all.html
      kbtool report diff before.json after.json
    """


_REPORT_OUTPUT = click.option(
    "--output",
    "-o",
    "outputs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Write the report: .json, .md, .html or .xml (JUnit), by extension (repeatable).",
)


@report_group.command("render")
@click.argument("file", type=click.Path(dir_okay=False))
@_REPORT_OUTPUT
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "json", "markdown", "html", "junit", "github", "annotations"]),
    help="Print this format on stdout (default: the terminal view, when no -o is given). github: a Markdown "
    "summary that fits a PR comment and $GITHUB_STEP_SUMMARY; annotations: ::error lines for GitHub Actions.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="The terminal view shows only these results (as `check --status`).",
)
@click.option("-q", "--quiet", is_flag=True, help="The terminal view: the verdict line only.")
@click.option("-v", "--verbose", is_flag=True, help="The terminal view: everything (as `check -v`).")
def report_render(file, outputs, fmt, statuses, quiet, verbose):
    """Render a JSON report again.

    Writes the same files `kbtool check -o` wrote from it.

    \b
    Examples:
      kbtool report render all.json
      kbtool report render all.json -o all.md -o all.xml
      kbtool report render reports/parity.json --status unexplained
    """
    verbosity = options.verbosity(quiet, verbose)
    from kbtool import reports
    from kbtool.reports import view
    from kbtool.reports.load import read_report
    from kbtool.reports.text import encodable

    statuses = view.check_statuses(statuses)
    fmt = fmt or (None if outputs else "terminal")
    if statuses and fmt != "terminal":
        raise KbtoolError(
            "--status filters the terminal view only; files and --format {} hold the whole report".format(fmt or "json")
        )
    report = read_report(file)
    reports.prepare_outputs(outputs)
    failures = reports.write_all(report, outputs, echo=lambda line: click.echo(line, err=True))
    if fmt == "terminal":
        shown = view.filtered(report, statuses)
        reports.render(shown, "terminal", verbosity=verbosity)
        if statuses:
            click.echo(view.shown_line(report, shown, statuses), err=True)
    elif fmt:
        click.echo(encodable(reports.render(report, fmt)), nl=False)
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(2 if failures else 0)


@report_group.command("merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_REPORT_OUTPUT
@click.option("--allow-incomplete", is_flag=True, help="Merge interrupted reports too (the merge is incomplete).")
@click.option("--strict", is_flag=True, help="Judge the merged report as `check --strict` does.")
def report_merge(files, outputs, allow_incomplete, strict):
    """Merge shards' or backends' reports into one.

    The parts are the JSON reports of shards (`check --shard K/N`) or of backends run apart. They must come from the same spec, seed, grid, --keras-config and known differences and hold no result twice.
    With no -o the merged JSON goes to stdout. Exit code: 0 the merged run is ok, 1 it is not (as `check`),
    2 reports that cannot be merged or a file that could not be written.

    \b
    Examples:
      kbtool report merge part1.json part2.json -o all.json -o all.html
      kbtool report merge part*.json --strict -o all.json
    """
    from kbtool import reports
    from kbtool.reports import merge as merge_mod
    from kbtool.reports.assemble import exit_code, verdict_reasons
    from kbtool.reports.load import read_report

    parts = [(name, read_report(name)) for name in merge_mod.distinct_files(files)]
    merged = merge_mod.merge(parts, allow_incomplete=allow_incomplete, strict=strict)
    reports.prepare_outputs(outputs)
    failures = reports.write_all(merged, outputs, echo=lambda line: click.echo(line, err=True))
    if not outputs:
        click.echo(reports.render(merged, "json"), nl=False)
    reasons = verdict_reasons(merged)
    click.echo(
        "kbtool: merged {} reports: {} results; {}".format(
            len(parts), len(merged["results"]), "ok" if merged["summary"]["ok"] else "not ok: " + ", ".join(reasons)
        ),
        err=True,
    )
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(2 if failures else exit_code(merged))


@report_group.command("diff")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
def report_diff(old, new, as_json):
    """Show what changed from OLD to NEW report.

    Per op × backend: new failures, fixed, other status changes, results no longer run or new, backend
    versions, known-difference counts, newly stale or grown entries.

    Exit code: 1 when something got worse (a new unexplained failure, a result no longer run, a backend that no
    longer starts, a newly stale or grown known difference), 0 otherwise, 2 on unreadable reports.

    \b
    Examples:
      kbtool report diff reports/parity.json new.json
      kbtool report diff before.json after.json --json
    """
    from kbtool.reports import diff as diff_mod
    from kbtool.reports.load import read_report

    found = diff_mod.diff(read_report(old), read_report(new))
    if as_json:
        click.echo(json.dumps(found, indent=2))
    else:
        click.echo(diff_mod.render_text(found, old, new), nl=False)
    sys.exit(1 if found["worse"] else 0)


@report_group.command("history-add")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="REPORT.json...")
@click.option(
    "--history",
    "history_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The history file (JSON Lines) to append to; made when missing.",
)
def report_history_add(files, history_path):
    """Append saved reports' runs to a parity history file.

    One line per backend per report: its date, versions, counts by status, pass as is, conformance, spec SHA-256
    and a digest per op. Earlier lines are never rewritten; a run the file already holds (same date and backend)
    is skipped. Every report is read before anything is written. Exit code: 0 appended, 2 a report or the history
    file that cannot be used.

    \b
    Examples:
      kbtool report history-add k224.json k225.json --history parity.jsonl
      kbtool report history parity.jsonl -o history.html
    """
    from kbtool.reports import history
    from kbtool.reports.load import read_report
    from kbtool.reports.merge import distinct_files

    history.check_target(history_path)
    lines = []
    for name in distinct_files(files):
        try:
            lines.extend(history.lines_of(read_report(name)))
        except KbtoolError as exc:
            text = str(exc)
            raise KbtoolError(text if name in text else f"{name}: {text}")
    written, skipped = history.append(history_path, lines)
    click.echo(
        "kbtool: appended {} line{} to {}{}".format(
            written,
            "" if written == 1 else "s",
            history_path,
            f" ({skipped} already there)" if skipped else "",
        ),
        err=True,
    )


@report_group.command("history")
@click.argument("history_path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option(
    "--output", "-o", "output", type=click.Path(dir_okay=False), help="Write the page here (.html, .md or .json)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "json", "html"]),
    help="The format (default: by -o's extension, else the terminal view on stdout).",
)
def report_history(history_path, output, fmt):
    """Draw a parity history file: parity per backend over releases, and the ops that changed.

    Per base backend: pass as is and conformance over its releases in version order (and a backend's plain runs
    by date), as a chart and a table, then the changes by release: for each consecutive pair the ops whose
    results changed, with their counts before and after. A bad line is named by its line number (stderr and the
    page) and left out. Exit code: 0 drawn, 2 a file that cannot be read or written.

    \b
    Examples:
      kbtool report history parity.jsonl
      kbtool report history parity.jsonl -o history.html
      kbtool report history parity.jsonl --format json
    """
    from kbtool.reports import check_writable, history
    from kbtool.reports.text import encodable

    if output:
        by_extension = history.format_of(output)
        if fmt and fmt != by_extension:
            raise KbtoolError(f"--format {fmt} does not match {output!r}")
        fmt = by_extension
        check_writable(output)
    entries, problems = history.read(history_path)
    for problem in problems:
        click.echo(f"kbtool: warning: bad history line: {problem}", err=True)
    text = encodable(history.render(history.view(history_path, entries, problems), fmt or "terminal"))
    _emit(text, output)


@report_group.command("migration")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the table here (.md or .html).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "html"]),
    help="The format (default: by -o's extension, else markdown on stdout).",
)
@_MAP
@options.SPEC
def report_migration(files, output, fmt, map_path, spec_path):
    """Write the K.* -> Keras 3 migration table.

    Every function of the spec with its Keras 3 expression (or why there is none), and beside it the parity
    verdict of each keras3-* engine in the given check reports (none given: no verdicts).

    \b
    Examples:
      kbtool report migration reports/parity.json -o migration.md
      kbtool report migration reports/parity.json --format html
    """
    from kbtool.reports import check_writable, migration
    from kbtool.reports.load import read_report
    from kbtool.reports.merge import distinct_files
    from kbtool.reports.text import encodable

    if output:
        extension = os.path.splitext(output)[1]
        by_extension = {".md": "markdown", ".html": "html"}.get(extension)
        if by_extension is None:
            raise KbtoolError(f"cannot tell the format of {output!r}: use .md or .html")
        if fmt and fmt != by_extension:
            raise KbtoolError(f"--format {fmt} does not match {output!r}")
        fmt = by_extension
        check_writable(output)
    keras3_map = _load_map(map_path, spec_path)
    reports = [read_report(name) for name in distinct_files(files)] if files else []
    text = encodable(migration.render(keras3_map, reports, fmt or "markdown"))
    _emit(text, output)


# ---------------------------------------------------------------------------- explore
@main.command()
@click.option("--op", required=True, help="The op to explore.", shell_complete=complete_op)
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Backend (repeatable): a built-in name (`kbtool backends` lists them) or a module path [@ENV]. "
    "Default: every installed built-in backend but numpy (the reference itself).",
)
@click.option(
    "--max-examples",
    default=100,
    show_default=True,
    type=click.IntRange(1, 100000),
    help="Drawn cases per backend (shrinking a failure runs a few more).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Hypothesis seed: the same seed, the same draws.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout.")
@click.option("--save", is_flag=True, help="Add each unexplained failure to the op's cases in the spec file.")
@click.option("--replay", metavar="JSON|@FILE", help="Run one case, as a failure's replay command gives it.")
@options.SPEC
@options.KNOWN
@options.TIMEOUT
@options.REPEAT
def explore(op, backend_names, max_examples, seed, as_json, save, replay, spec_path, known_path, case_timeout, repeat):
    """Search one op's inputs for differences (Hypothesis).

    Draws inputs, parameters and keras.json settings, and judges them against the reference as `check` does.
    Each failure is shrunk to a minimal case with a replay command. Exit code: 0 nothing unexplained, 1 an
    unexplained failure (or a backend that could not run), 2 usage errors.

    \b
    Examples:
      kbtool explore --op mean --backend theano --max-examples 200
      kbtool explore --op mean --backend theano --seed 1 --json
      kbtool explore --op mean --backend theano --replay @case.json
    """
    from kbtool.explore import engine, render
    from kbtool.explore.save import save_case
    from kbtool.interrupts import Interrupted, Interrupts
    from kbtool.plan import resolve_backends
    from kbtool.runners import registry

    raw = engine.parse_replay(replay) if replay else None
    spec_obj = _load_spec(spec_path)
    spec_obj.op(op)  # an unknown op: one line naming the closest ones
    builtin = [name for name in registry.BUILTIN if name != "numpy"]
    slots = resolve_backends(list(backend_names), registry.launch_for, builtin)
    if not any(slot.launch for slot in slots):
        raise KbtoolError(
            "nothing to explore: no backend can run here ({})".format(
                "; ".join(f"{s.name}: {s.unavailable}" for s in slots)
            )
        )
    exploration = engine.Exploration(
        spec_obj, op, seed, engine.load_known_entries(spec_obj, known_path), case_timeout=case_timeout, repeat=repeat
    )
    if raw is None and exploration.strategy is None:
        raise KbtoolError(
            f"nothing to explore: {op} has no case to start from (its cases are all raw-args, raises, "
            "random or gradient cases)"
        )
    outcomes = []  # filled as each backend finishes (or is interrupted): a signal keeps what was found
    with Interrupts(exploration.cancel, "the findings so far follow", raise_in_main=True) as interrupts:
        try:
            if raw is not None:
                for slot in slots:
                    if slot.launch:
                        outcomes.append(engine.replay(exploration, slot.name, slot.launch, raw))
            else:
                with render.Progress() as progress:
                    engine.explore(exploration, slots, max_examples, progress=progress, outcomes=outcomes)
        except Interrupted:
            pass
    if interrupts.caught:
        save = False  # an interrupted search saves nothing: its last draw may not be minimal
    saved, not_saved = [], {}
    if save:
        unexplained = {json.dumps(f.case, sort_keys=True): f for o in outcomes for f in o.unexplained}
        for failure in unexplained.values():
            about = (
                f"found by kbtool explore (seed {seed}) on {failure.backend}, {failure.mode} mode: {failure.message}"
            )
            try:
                saved.append(f"{op} case {save_case(spec_obj.path, op, failure.case, about[:300])}")
            except KbtoolError as exc:  # the findings and their replays are still printed, the problem after them
                not_saved[str(exc)] = None
    if as_json:
        click.echo(json.dumps(render.as_json(op, seed, max_examples, outcomes, saved), indent=2))
    else:
        click.echo(render.text(op, outcomes, saved))
    for problem in not_saved:
        click.echo(f"kbtool: error: {problem}", err=True)
    if interrupts.caught:
        click.echo(f"kbtool: interrupted by {interrupts.name}: the findings above are partial", err=True)
        sys.exit(interrupts.exit_code)
    sys.exit(engine.exit_code(outcomes))


if __name__ == "__main__":  # pragma: no cover
    main()
