import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.reports.report import standard
from kbtool.runners.registry import RECIPES
from kbtool.specs import loader


def run(*args, env=None, stdout_only=False):
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout if stdout_only else result.output


def test_help_imports_no_numpy_or_backend():
    code = (
        "import sys; from kbtool.cli import run\n"  # the console script's entry point (it also marks the process)
        "sys.argv = ['kbtool', '--help']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'yaml', 'jsonschema', 'rich', 'tensorflow', 'theano', 'cntk') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert out.strip().splitlines()[-1] == "[]"


def test_check_unknown_op_is_a_usage_error():
    code, out = run("check", "--op", "batch_dott", "--backend", "numpy")
    assert code == 2 and "no op 'batch_dott'" in out and "did you mean batch_dot" in out
    assert "Traceback" not in out


def test_check_unknown_backend_is_a_usage_error():
    code, out = run("check", "--op", "dot", "--backend", "jax")
    assert code == 2 and "unknown backend 'jax'" in out


def test_check_bad_output_extension_is_refused_before_running(tmp_path):
    code, out = run("check", "--op", "dot", "--backend", "numpy", "-o", str(tmp_path / "report.pdf"))
    assert code == 2 and "cannot tell the format" in out


def test_report_folders_are_not_made_and_unwritable_ones_refused_before_running(tmp_path):
    target = tmp_path / "new" / "dir" / "report.md"
    code, out = run("check", "--op", "dot", "--backend", "numpy", "-o", str(target))
    assert code == 2 and "no folder" in out and not (tmp_path / "new").exists()  # issue #33: like bisect's -o
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    code, out = run("check", "--op", "dot", "--backend", "numpy", "-o", str(blocked / "report.md"))
    assert code == 2 and "is a file, not a folder" in out and "Traceback" not in out
    assert blocked.read_text() == "not a folder"


def test_backend_not_installed_says_how_to_install(tmp_path):
    env = {"KBTOOL_HOME": str(tmp_path)}
    code, out = run("check", "--op", "dot", "--backend", "tensorflow", env=env)
    assert code == 2 and "not installed: run `kbtool env install tensorflow`" in out
    code, out = run("backends", "--json", env=env, stdout_only=True)
    assert code == 0
    infos = {i["name"]: i for i in json.loads(out)}
    assert infos["numpy"]["status"] == "available"
    assert list(infos) == ["numpy"] + list(RECIPES)
    for name in RECIPES:
        assert infos[name]["status"] == "not installed" and "kbtool env install " + name in infos[name]["reason"]


def test_check_json_report_and_every_renderer(tmp_path):
    outputs = [str(tmp_path / name) for name in ("r.json", "r.md", "r.html", "r.xml")]
    args = ["check", "--op", "batch_dot", "--op", "clip", "--backend", "numpy", "--json"]
    for path in outputs:
        args += ["-o", path]
    code, out = run(*args, stdout_only=True)
    assert code == 0, out
    report = json.loads(out)
    assert [b["name"] for b in report["backends"]] == ["numpy"]
    assert report["backends"][0]["status"] == "available" and "numpy" in report["backends"][0]["versions"]
    record = report["results"][0]
    assert set(record) >= {"op", "case", "backend", "mode", "status", "message"}
    assert {r["op"] for r in report["results"]} == {"batch_dot", "clip"}
    assert all(r["status"] == "pass" or r.get("known") for r in report["results"])
    assert any(r["status"] == "pass" for r in report["results"])
    assert json.loads(open(outputs[0]).read())["results"] == report["results"]
    markdown = open(outputs[1]).read()
    assert "| batch_dot | ≈ " in markdown and "| clip | ≈ " in markdown  # grad cases: known, numpy has no autodiff
    assert "<details><summary>Documentation examples: " in markdown
    assert '<td class="op">batch_dot</td>' in open(outputs[2]).read()
    assert 'name="kbtool.numpy"' in open(outputs[3]).read()


def test_check_exit_code_1_on_divergence(tmp_path, custom_backend):
    # a custom backend whose clip ignores max_value diverges from the reference
    module = custom_backend(
        "offbyone",
        "kb",
        "from kbtool.reference import *\n"
        "import numpy as np\n"
        "def clip(x, min_value, max_value):\n"
        "    return np.maximum(x, min_value)\n",
    )
    code, out = run("check", "--op", "clip", "--backend", module, "--case", "basic", "--mode", "eager")
    assert code == 1
    assert f"✗ fail clip on {module}: " in out and "values differ" in out
    assert f"kbtool check --op clip --case basic --backend {module} --mode eager" in out  # its repro


def test_doc_examples_are_checked_against_what_each_doc_shows():
    code, out = run(
        "check", "--op", "batch_dot", "--backend", "numpy", "--case", "example:diagonal", "--json", stdout_only=True
    )
    assert code == 0
    verdicts = [r["doc_check"] for r in json.loads(out)["results"]]
    for verdict in verdicts:
        by_docs = {tuple(v["docs"]): v["matches"] for v in verdict}
        assert by_docs[("ja-1", "ja-1md", "ja-2")] is False  # [[17, 53]] in the older pages
        assert by_docs[("zh-2.2", "ko-2.2")] is True  # [[17], [53]]


def test_env_commands_on_an_empty_home(tmp_path):
    env = {"KBTOOL_HOME": str(tmp_path)}
    code, out = run("env", "list", "--json", env=env, stdout_only=True)
    assert code == 0 and [(i["name"], i["installed"]) for i in json.loads(out)] == [(name, False) for name in RECIPES]
    code, out = run("env", "remove", "theano", env=env)
    assert code == 2 and "theano is not installed" in out
    code, out = run("env", "install", "jax", env=env)
    assert code == 2 and "unknown environment jax" in out
    code, out = run("env", "install", env=env)
    assert code == 2 and "--all" in out


def test_check_with_another_spec_uses_the_shipped_known_differences_without_judging_them_by_that_spec(tmp_path):
    spec = tmp_path / "ops.yaml"
    spec.write_text(
        "schema_version: 1\ndocs:\n  ko-2.2: {file: 004.txt, lang: ko}\nops:\n  sum:\n    category: reduce\n"
        "    summary: s\n    documented_in: [ko-2.2]\n    signature:\n      - {name: x, kind: tensor}\n"
        "      - {name: axis, kind: value, default: null}\n"
        "    cases:\n      - {id: basic, inputs: [{shape: [2, 3]}], kwargs: {axis: 1}}\n"
    )
    code, out = run("check", "--spec", str(spec), "--backend", "numpy", "--json", stdout_only=True)
    assert code == 0, out
    report = json.loads(out)
    assert [(r["op"], r["case"], r["status"]) for r in report["results"]] == [("sum", "basic", "pass")] * 2


def test_every_command_that_prints_data_takes_json(tmp_path, keras_home):
    def data(*args):
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))

    # abs's hard-value cases hold NaN and inf: standard JSON spells them as strings, as the report does
    assert data("spec", "show", "abs", "--json") == (0, {"abs": standard(loader.load().op("abs"))})
    code, doc = data("spec", "validate", "--json")
    assert code == 0 and doc["valid"] is True and doc["ops"] == 154 and doc["problems"] == []
    bad = tmp_path / "bad.yaml"
    bad.write_text("ops: [unclosed\n")
    code, doc = data("spec", "validate", str(bad), "--json")
    assert code == 1 and doc["valid"] is False and doc["problems"] and doc["path"] == str(bad)
    assert data("config", "path", "--json") == (0, {"path": str(keras_home / "keras.json"), "exists": False})
    assert data("config", "get", "floatx", "--json") == (
        0,
        {"key": "floatx", "value": "float32", "source": "default (no file)"},
    )
    code, doc = data("config", "validate", "--json")
    assert code == 0 and doc == {"path": str(keras_home / "keras.json"), "valid": True, "problems": []}
    keras_home.mkdir()
    (keras_home / "keras.json").write_text('{"floatx": "float8"}')
    code, doc = data("config", "validate", "--json")
    assert code == 1 and doc["valid"] is False and "floatx must be one of" in doc["problems"][0]
    code, doc = data("env", "system-packages", "--json")
    assert code == 0 and "libopenblas-dev" in doc


# ---------------------------------------------------------------------------- the group and its table of commands


def _fresh_group():
    """A kbtool group of its own, none of its commands loaded yet."""
    from kbtool import cli

    return cli.Group(name="kbtool", lazy_commands=cli.COMMANDS, callback=main.callback, help=main.help)


def test_the_table_summaries_are_the_commands_own():
    from kbtool.cli import COMMANDS, load_command

    for name, entry in COMMANDS.items():
        command = load_command(entry.target)
        assert command.get_short_help_str(limit=200) == entry.summary, name


def test_the_command_list_is_the_same_loaded_or_not():
    import click

    lazy, loaded = _fresh_group(), _fresh_group()
    for name in loaded.list_commands(click.Context(loaded)):
        loaded.get_command(click.Context(loaded), name)
    for width in (40, 60, 80, 120):
        texts = [g.get_help(click.Context(g, info_name="kbtool", terminal_width=width)) for g in (lazy, loaded)]
        assert texts[0] == texts[1], width
    assert set(lazy.commands) == set()  # listing them loaded none


def test_help_and_one_command_import_only_what_they_need():
    code = (
        "import sys; from kbtool.cli import run\n"
        "sys.argv = ['kbtool'] + sys.argv[1:]\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'kbtool.completion' or m.endswith('.command')))"
    )
    for args, loaded in (
        (["--help"], []),
        (["config", "path"], ["kbtool.config.command"]),
        (["spec", "--help"], ["kbtool.specs.command"]),
    ):
        out = subprocess.run([sys.executable, "-c", code] + args, stdout=subprocess.PIPE, check=True).stdout.decode()
        assert out.strip().splitlines()[-1] == repr(loaded), args


def test_no_command_module_imports_another_or_the_group():
    """kbtool.completion (the completers every command module takes, and the `completion` command) is the one
    module the others share."""
    import ast
    import os

    from kbtool.cli import COMMANDS

    targets = {entry.target.partition(":")[0] for entry in COMMANDS.values()} - {"kbtool.completion"} | {"kbtool.cli"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for module in sorted(targets - {"kbtool.cli"}):
        with open(os.path.join(root, *module.split(".")) + ".py", encoding="utf-8") as f:
            tree = ast.parse(f.read())
        imported = {
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        imported |= {
            f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert imported & (targets - {module}) == set(), module


def test_a_mistyped_command_is_told_the_close_ones_as_before():
    code, out = run("chek")
    assert code == 2 and "No such command 'chek'. Did you mean 'check'?" in out
