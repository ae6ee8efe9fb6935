"""The K.* -> Keras 3 map (specs/keras3_map.yaml): it loads, covers exactly the spec's functions, refuses bad rows
with one line each; the migration table puts each keras3-* engine's verdict beside each function; the CLI's
`spec map` and `report migration`. One `backends` test resolves every keras.* name in the real keras 3.15.1."""

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.reports import migration
from kbtool.specs import keras3_map
from tests.helpers import available, make_report, record


@pytest.fixture(scope="module")
def shipped():
    return keras3_map.load()


def test_the_shipped_map_covers_exactly_the_spec(shipped, spec):
    assert [row.op for row in shipped.rows] == list(spec.ops)
    assert len(shipped.rows) == 154
    assert shipped.keras == "3.15.1"
    for row in shipped.rows:
        assert (row.keras3 is None) != (row.none is None), row.op
        if row.keras3 is not None:
            keras3_map.parse_code(row.keras3)  # a SyntaxError fails the test
    without = {row.op for row in shipped.rows if not row.has_expression}
    assert {"gradients", "learning_phase", "is_placeholder"} <= without
    assert shipped.row("in_top_k").keras3 == "keras.ops.in_top_k(targets, predictions, k)"
    # the Keras 1 aliases say so and point at their Keras 2 name's home
    for alias, target in [("image_dim_ordering", "image_data_format"), ("lesser", "less"), ("deconv2d", None)]:
        row = shipped.row(alias)
        assert "Keras 1 alias" in (row.note or ""), alias
        if target:
            assert row.keras3 == shipped.row(target).keras3


def test_keras_names_takes_each_whole_dotted_name():
    expr = "keras.ops.image.resize(x, keras.config.floatx()).astype(y.keras.z) + keras.ops.abs(x) + keras"
    assert keras3_map.keras_names(expr) == ["keras.config.floatx", "keras.ops.abs", "keras.ops.image.resize"]
    assert keras3_map.mentioned_names("not keras.ops.identity: that is keras.ops.identity(n).") == [
        "keras.ops.identity"
    ]


def test_all_names_include_those_notes_mention(shipped):
    names = keras3_map.all_keras_names(shipped)
    assert "keras.ops.average_pool" in names  # only in pool2d's note
    assert "keras.ops.abs" in names and all(n.startswith("keras.") for n in names)


HEAD = 'schema_version: 1\nkeras: "3.15.1"\nmap:\n'
OPS = ["abs", "dot", "gradients"]
GOOD = {
    "abs": '  abs:\n    keras3: "keras.ops.abs(x)"\n',
    "dot": '  dot:\n    keras3: "keras.ops.dot(x, y)"\n    note: "NumPy\'s rule."\n',
    "gradients": '  gradients:\n    none: "each engine\'s own autodiff"\n',
}


def write_map(tmp_path, **rows):
    text = HEAD + "".join(rows.get(op, GOOD[op]) for op in OPS if rows.get(op, GOOD[op]) is not None)
    text += "".join(extra for op, extra in rows.items() if op not in OPS)
    path = tmp_path / "map.yaml"
    path.write_text(text)
    return str(path)


def problems(path):
    with pytest.raises(keras3_map.MapError) as info:
        keras3_map.load(path, OPS)
    return info.value.problems


def test_a_small_valid_map_loads(tmp_path):
    loaded = keras3_map.load(write_map(tmp_path), OPS)
    assert [r.as_dict() for r in loaded.rows] == [
        {"op": "abs", "keras3": "keras.ops.abs(x)"},
        {"op": "dot", "keras3": "keras.ops.dot(x, y)", "note": "NumPy's rule."},
        {"op": "gradients", "none": "each engine's own autodiff"},
    ]
    assert loaded.rows[1].line == 6


def test_a_missing_row_names_the_function(tmp_path):
    path = write_map(tmp_path, dot=None)
    assert problems(path) == [
        f"{path}:3: map: no row for 'dot', a function of the spec (each function needs keras3: or none:)"
    ]


def test_an_extra_row_names_it(tmp_path):
    path = write_map(tmp_path, conv9d='  conv9d:\n    keras3: "keras.ops.conv(x, k)"\n')
    assert problems(path) == [f"{path}:11: map.conv9d: 'conv9d' is no function of the spec"]


def test_both_keras3_and_none_is_refused(tmp_path):
    path = write_map(tmp_path, abs='  abs:\n    keras3: "keras.ops.abs(x)"\n    none: "why"\n')
    (line,) = problems(path)
    assert line.startswith(f"{path}:4: map.abs: both keras3 and none")


def test_neither_keras3_nor_none_is_refused(tmp_path):
    path = write_map(tmp_path, abs='  abs:\n    note: "a note alone"\n')
    (line,) = problems(path)
    assert line.startswith(f"{path}:4: map.abs: neither keras3 nor none")


def test_an_expression_that_is_not_python_is_refused(tmp_path):
    path = write_map(tmp_path, abs='  abs:\n    keras3: "keras.ops.abs(x"\n')
    (line,) = problems(path)
    assert line.startswith(f"{path}:5: map.abs.keras3: not a Python expression")


def test_an_unknown_key_and_a_duplicate_row_are_refused(tmp_path):
    path = write_map(tmp_path, abs='  abs:\n    keras2: "K.abs(x)"\n')
    assert any(p.startswith(f"{path}:4: map.abs: Additional properties") for p in problems(path))
    path = write_map(tmp_path, extra='  abs:\n    keras3: "keras.ops.abs(x)"\n')
    assert any("duplicate key 'abs'" in p for p in problems(path))


# --- the migration table ---


def engine_report():
    results = [
        record("abs", "a", "keras3-jax", "pass"),
        record("abs", "b", "keras3-jax", "pass"),
        record("dot", "a", "keras3-jax", "pass"),
        record("dot", "b", "keras3-jax", "fail"),
        record("abs", "a", "keras3-torch", "fail", known="torch rounds"),
        record("dot", "a", "keras3-torch", "could_not_start"),
        dict(record("abs", "a", "keras3-jax", "fail"), device="gpu"),  # Result.device: the lead's branch adds it
        record("abs", "a", "numpy", "pass"),
        record("abs", "a", "keras3", "pass"),  # the legacy keras3 backend is no Keras 3 engine
    ]
    for r in results:
        r.pop("repro", None)
    return {"backends": [{"name": n} for n in ("numpy", "keras3", "keras3-jax", "keras3-torch")], "results": results}


@pytest.fixture()
def small_map(tmp_path):
    return keras3_map.load(write_map(tmp_path), OPS)


def test_the_table_gives_each_engine_its_verdict(small_map):
    data = migration.table(small_map, [engine_report()])
    assert data["engines"] == ["keras3-jax", "keras3-jax (gpu)", "keras3-torch"]
    verdicts = {row["op"]: {e: v["text"] for e, v in row["verdicts"].items()} for row in data["rows"]}
    assert verdicts == {
        "abs": {"keras3-jax": "✓ pass 2/2", "keras3-jax (gpu)": "✗ fail 0/1", "keras3-torch": "≈ known 0/1"},
        "dot": {
            "keras3-jax": "✗ fail 1/2",
            "keras3-jax (gpu)": "not run",
            "keras3-torch": "not run (its worker could not start)",
        },
        "gradients": {"keras3-jax": "not run", "keras3-jax (gpu)": "not run", "keras3-torch": "not run"},
    }
    assert data["per_engine"]["keras3-jax"] == {"pass": 1, "not_run": 1}
    assert data["per_engine"]["keras3-torch"] == {"pass": 0, "not_run": 2}
    assert (data["with_expression"], data["without"]) == (2, 1)


def test_the_markdown_page_has_counts_rows_and_verdict_columns(small_map):
    page = migration.render(small_map, [engine_report()], "markdown")
    assert "- 3 functions of the Keras 2 backend API: 2 with a Keras 3 expression, 1 with no equivalent" in page
    assert "- keras3-jax: 1 of 3 functions pass as is, 1 not run." in page
    assert "| function | Keras 3 | note | keras3-jax | keras3-jax (gpu) | keras3-torch |" in page
    assert "| `K.dot` | `keras.ops.dot(x, y)` | NumPy's rule. | ✗ fail 1/2 | not run | not run (its worker" in page
    assert "| `K.gradients` | no equivalent: each engine's own autodiff |" in page


def test_without_a_report_there_are_no_verdict_columns_and_it_says_so(small_map):
    page = migration.render(small_map, [], "markdown")
    assert "No parity verdicts: no report was given" in page
    assert "| function | Keras 3 | note |\n" in page
    page = migration.render(small_map, [{"backends": [{"name": "numpy"}], "results": []}], "markdown")
    assert "the report(s) hold no keras3-* engine" in page


def test_the_html_page_escapes_and_shows_verdicts(tmp_path):
    path = write_map(tmp_path, abs='  abs:\n    keras3: "keras.ops.abs(x)"\n    note: "<script>x</script>"\n')
    page = migration.render(keras3_map.load(path, OPS), [engine_report()], "html")
    assert "<script>x" not in page and "&lt;script&gt;x" in page
    assert '<td class="v-pass">✓ pass 2/2</td>' in page and '<td class="v-notrun">not run</td>' in page


# --- the CLI ---


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not result.exception or isinstance(result.exception, SystemExit), result.exception
    return result


def one_line_error(result, says):
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("kbtool: error: "), result.stderr
    assert says in result.stderr


def test_spec_map_json_and_one_op():
    result = run("spec", "map", "--json", "--op", "gradients", "--op", "abs")
    assert result.exit_code == 0
    assert [row["op"] for row in json.loads(result.stdout)] == ["abs", "gradients"]
    result = run("spec", "map", "--op", "in_top_k")
    assert (
        result.stdout
        == "in_top_k\tkeras.ops.in_top_k(targets, predictions, k)\tThe arguments are swapped: targets come first in Keras 3.\n"
    )


def test_spec_map_errors_are_one_line(tmp_path):
    one_line_error(run("spec", "map", "--op", "in_top_kk"), "no op 'in_top_kk'")
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + '  abs:\n    keras3: "keras.ops.abs(x)"\n')
    one_line_error(run("spec", "map", "--map", bad), f"{bad}:3: map: no row for 'batch_dot'")
    one_line_error(run("spec", "map", "--map", tmp_path / "absent.yaml"), "absent.yaml")


def test_report_migration_writes_the_page(tmp_path):
    report = make_report(
        [available("keras3-jax"), available("numpy")],
        [record("abs", "a", "keras3-jax", "pass"), record("dot", "a", "keras3-jax", "fail")],
    )
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    out = tmp_path / "migration.md"  # -o needs its folder to exist (issue #33)
    result = run("report", "migration", path, "-o", out)
    assert result.exit_code == 0 and result.stderr == f"wrote {out}\n"
    page = out.read_text()
    assert "- keras3-jax: 1 of 154 functions pass as is, 152 not run." in page
    assert page.count("\n| `K.") == 154
    assert "| `K.dot` | `keras.ops.dot(x, y)` |" in page and "| ✗ fail 0/1 |" in page
    html = run("report", "migration", "--format", "html")
    assert html.exit_code == 0 and html.stdout.startswith("<!doctype html>") and "No parity verdicts" in html.stdout


def test_report_migration_errors_are_one_line(tmp_path):
    one_line_error(run("report", "migration", "-o", tmp_path / "m.txt"), "use .md or .html")
    one_line_error(run("report", "migration", "-o", tmp_path / "m.md", "--format", "html"), "does not match")
    one_line_error(run("report", "migration", tmp_path / "absent.json"), "absent.json")
    junk = tmp_path / "junk.json"
    junk.write_text("{")
    one_line_error(run("report", "migration", junk), "junk.json")
    assert not os.path.exists(tmp_path / "m.md")


@pytest.mark.backends
def test_every_keras_name_resolves_in_keras_3(shipped):
    """Each dotted keras.* name the map uses or mentions is an attribute chain of keras 3.15.1 in the tensorflow
    environment (the one keras3-tensorflow runs in). A missing environment fails, as other backends tests do."""
    from kbtool.runners.registry import RECIPES

    python = RECIPES["tensorflow"].env_python()
    assert os.path.exists(python), f"no tensorflow environment at {python}: run `kbtool env install tensorflow`"
    names = keras3_map.all_keras_names(shipped)
    script = (
        "import json, sys, keras\n"
        "bad = []\n"
        "for name in json.loads(sys.stdin.read()):\n"
        "    obj = keras\n"
        "    try:\n"
        "        for part in name.split('.')[1:]:\n"
        "            obj = getattr(obj, part)\n"
        "    except AttributeError:\n"
        "        bad.append(name)\n"
        "print(json.dumps({'version': keras.__version__, 'unresolved': bad}))\n"
    )
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [python, "-c", script], input=json.dumps(names), capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"version": shipped.keras, "unresolved": []}
    assert len(names) > 100
