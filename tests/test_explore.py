"""`kbtool explore`: drawn cases, planted bugs found and shrunk, replay, known differences, --save, usage errors.

The planted bugs live in tests/fixtures/planted_backend.py (the reference with four bugs that no spec case reaches);
it runs on kbtool's own Python, so these are fast tests. The last test explores ops that agree today on the real
backends (marked `backends`).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.cli import main
from kbtool.explore import engine, save, strategies
from kbtool.specs import binding, loader
from kbtool.specs.cases import expand_case, raw_cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLANTED = "tests.fixtures.planted_backend"
PLANTED_OPS = ["mean", "softsign", "softmax", "abs"]


class Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def kbtool(*args, home):
    """Runs the CLI in this process (the spec loads once), as a user would: KBTOOL_HOME in `home`, the repository on
    PYTHONPATH for the planted backend's worker."""
    env = {"KBTOOL_HOME": str(home), "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    result = CliRunner().invoke(main, list(args), env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """`kbtool explore --max-examples 200 --seed 0 --json` of each planted op: {op: (exit code, document)}."""
    home = tmp_path_factory.mktemp("home")
    out = {}
    for op in PLANTED_OPS:
        proc = kbtool(
            "explore", "--op", op, "--backend", PLANTED, "--max-examples", "200", "--seed", "0", "--json", home=home
        )
        out[op] = (proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else proc.stderr)
    return out


# ---------------------------------------------------------------------------- drawn cases


@pytest.mark.parametrize("op", ["mean", "softmax", "conv2d", "concatenate", "relu", "gather", "pool2d", "dot"])
def test_drawn_cases_are_spec_cases_built_on_a_template(spec, op):
    entry = spec.ops[op]
    strategy = strategies.case_strategy(op, entry, raw_cases(spec, op), *engine.domains_of(spec, op))
    template_ids = {raw["id"] for raw in strategies.templates(raw_cases(spec, op))}

    @settings(max_examples=40, database=None, deadline=None)
    @given(strategy)
    def check(raw):
        assert raw["id"].split(".")[0] in {t.split(".")[0] for t in template_ids}
        spec_id = strategies.spec_case_id(raw["id"])
        assert all(c.isalnum() or c in "_.-" for c in spec_id) and len(spec_id) == len(raw["id"]), raw["id"]
        inputs = binding.case_inputs(raw)
        assert all("value" in inp or 0 in inp["shape"] for inp in inputs)  # literal: exact to replay and save
        try:
            case = expand_case(op, entry, raw, 0)
        except binding.BindingError:
            return  # a value the signature refuses: rejected during exploration
        for array in case.arrays:
            assert np.all(np.isfinite(array)) if array.dtype.kind == "f" else True

    check()


def test_a_draw_that_differs_only_in_values_keeps_the_template_id(spec):
    entry = spec.ops["mean"]
    template = next(raw for raw in entry["cases"] if raw["id"] == "axis_list")
    pools = strategies.param_pools(entry, entry["cases"])
    drawn = strategies._drawn_case(template, pools, ["float32"], set(), ["x"], {})
    ids = set()

    @settings(max_examples=60, database=None, deadline=None, derandomize=True)  # the `any` below is a draw
    @given(drawn)
    def collect(raw):
        ids.add(raw["id"])
        same = (
            raw.get("kwargs") == template.get("kwargs")
            and raw["inputs"][0]["dtype"] == "float32"
            and np.shape(raw["inputs"][0]["value"]) == tuple(template["inputs"][0]["shape"])
        )
        assert (raw["id"] == "axis_list") == same, raw

    collect()
    assert "axis_list" in ids and any(i.startswith("axis_list.keepdims=true") for i in ids), sorted(ids)


def test_choices_put_the_templates_value_first_and_never_pass_the_default_twice():
    unset = strategies._UNSET
    assert strategies.choices(1, [0, 1, None], None) == [1, 0, None]
    assert strategies.choices(unset, [0, 1, None], None) == [unset, 0, 1]
    assert strategies.choices(unset, [[1, 2], {"tuple": [1, 2]}], unset) == [unset, [1, 2], {"tuple": [1, 2]}]


def test_case_ids_name_each_value_as_the_grid_does_so_globs_can_match():
    assert strategies.id_text([1, 2]) == "1x2" and strategies.id_text({"tuple": [1, -1]}) == "(1x-1)"
    assert strategies.id_text(None) == "none" and strategies.id_text(True) == "true"
    assert strategies.id_text("channels_first") == "channels_first"
    assert strategies.case_id("axis1", ["axis=-1", "shape=2x3"]) == "axis1.axis=-1.shape=2x3"
    assert strategies.spec_case_id("grid.axis=(1x-1).keepdims=true") == "grid.axis__1x-1_.keepdims_true"


def test_a_draw_from_a_grid_row_is_named_as_the_grid_names_its_rows(spec):
    entry = spec.ops["mean"]
    grid = [raw for raw in raw_cases(spec, "mean") if raw["id"].startswith("grid.")]
    pools = strategies.param_pools(entry, grid, engine.domains_of(spec, "mean")[0])

    @settings(max_examples=40, database=None, deadline=None)
    @given(st.sampled_from(grid).flatmap(lambda t: strategies._drawn_case(t, pools, ["float32"], set(), ["x"], {})))
    def check(raw):
        axis, keepdims = raw["kwargs"]["axis"], raw["kwargs"]["keepdims"]
        assert raw["id"].startswith(f"grid.axis={strategies.id_text(axis)}.keepdims={strategies.id_text(keepdims)}"), (
            raw["id"]
        )

    check()


@pytest.mark.parametrize(
    "inp, dtype, low, high",
    [
        ({"shape": [3]}, "float32", -10.0, 10.0),
        ({"shape": [3], "dist": "positive"}, "float32", 0.1, 10.0),
        ({"shape": [3], "dist": "uniform", "low": 500, "high": 1000}, "float32", 500.0, 1000.0),
        ({"value": [0.0, 0.25, 1.0]}, "float64", 0.0, 10.0),
        ({"value": [-1.0e30, 1.0]}, "float32", -1.0e30, 10.0),
    ],
)
def test_values_stay_within_the_templates_meaning(inp, dtype, low, high):
    @settings(max_examples=100, database=None, deadline=None)
    @given(strategies.elements(inp, dtype))
    def check(value):
        slack = 1e-6 * max(abs(low), abs(high), 1.0)  # bounds rounded to the dtype
        assert np.isfinite(value) and low - slack <= value <= high + slack, value

    check()


def test_integer_literals_keep_their_values_and_randint_its_bounds():
    @settings(max_examples=60, database=None, deadline=None)
    @given(st.data())
    def check(data):
        drawn = data.draw(strategies._drawn_input({"value": [4, 0, 1], "dtype": "int32"}, (3,), (3,), None))
        assert drawn == {"value": [4, 0, 1], "dtype": "int32"}
        value = data.draw(strategies.elements({"shape": [2], "dist": "randint", "low": -5, "high": 5}, "int32"))
        assert -5 <= value < 5

    check()


# ---------------------------------------------------------------------------- planted bugs


def test_check_misses_the_planted_bugs(tmp_path):
    proc = kbtool(
        "check", *sum([["--op", op] for op in PLANTED_OPS], []), "--backend", PLANTED, "--json", home=tmp_path
    )
    report = json.loads(proc.stdout)
    values = [r for r in report["results"] if not r["case"].startswith("grad")]
    assert values and all(r["status"] == "pass" for r in values), [r for r in values if r["status"] != "pass"]
    # the only other results: the reference (under the planted bugs) has no autodiff
    assert all(r["status"] == "unsupported" for r in report["results"] if r["case"].startswith("grad"))


def _only_failure(explored, op):
    code, doc = explored[op]
    assert code == 1, doc
    (failure,) = [f for f in doc["failures"] if not f["known"]]
    assert failure["op"] == op and failure["backend"] == PLANTED and failure["repro"]
    assert doc["examples"][PLANTED] <= 400  # 200 drawn at most, then shrinking
    return failure, [
        np.array(inp["value"], dtype=inp["dtype"]) for inp in binding.case_inputs({"inputs": failure["inputs"]})
    ]


@pytest.mark.slow
def test_explore_finds_mean_wrong_for_several_axes_with_keepdims_in_float64(explored):
    failure, (x,) = _only_failure(explored, "mean")
    axis = failure["kwargs"]["axis"]
    assert isinstance(axis, list) or set(axis) == {"tuple"}
    assert failure["kwargs"]["keepdims"] is True and x.dtype == np.float64
    assert "differ" in failure["message"]


@pytest.mark.slow
def test_explore_finds_softsign_wrong_above_a_magnitude_and_shrinks_the_values(explored):
    failure, (x,) = _only_failure(explored, "softsign")
    assert np.any((np.abs(x) > 4) & (np.abs(x) < 1e6))
    # shrunk: one repeated small whole value past the magnitude (5 or -10 by Hypothesis's version: its shrinker)
    value = float(x.ravel()[0])
    assert len(set(x.ravel().tolist())) == 1 and value == int(value) and 4 < abs(value) <= 10


@pytest.mark.slow
def test_explore_finds_softmax_wrong_on_axis_0_of_rank_4_and_shrinks_the_shape(explored):
    failure, (x,) = _only_failure(explored, "softmax")
    assert failure["kwargs"] == {"axis": 0} and x.shape == (1, 1, 1, 1), x.shape  # shrunk to the smallest


@pytest.mark.slow
def test_explore_finds_abs_wrong_from_rank_3_and_shrinks_the_shape(explored):
    failure, (x,) = _only_failure(explored, "abs")
    assert x.shape == (1, 1, 1), x.shape  # the smallest rank-3 input
    # drawn on one of abs's spec cases (which one depends on the cases the spec holds), shrunk to that shape
    template, _, drawn = failure["case"].partition(".")
    templates = {raw["id"] for raw in raw_cases(loader.load(), "abs")}
    assert template in templates and drawn == "shape=1x1x1", failure["case"]


@pytest.mark.slow
def test_the_repro_command_replays_the_failure_exactly(explored, tmp_path):
    failure, _ = _only_failure(explored, "mean")
    argv = shlex.split(failure["repro"])
    assert argv[:2] == ["kbtool", "explore"] and "--replay" in argv
    proc = kbtool(*(argv[1:] + ["--json"]), home=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (again,) = json.loads(proc.stdout)["failures"]
    assert (again["message"], again["mode"], again["inputs"]) == (
        failure["message"],
        failure["mode"],
        failure["inputs"],
    )


@pytest.mark.slow
def test_the_same_seed_finds_the_same_minimal_example(explored, tmp_path):
    proc = kbtool(
        "explore", "--op", "abs", "--backend", PLANTED, "--max-examples", "200", "--seed", "0", "--json", home=tmp_path
    )
    assert proc.returncode == 1
    again = [f for f in json.loads(proc.stdout)["failures"] if not f["known"]]
    first = [f for f in explored["abs"][1]["failures"] if not f["known"]]
    assert [(f["case"], f["inputs"]) for f in again] == [(f["case"], f["inputs"]) for f in first]
    assert os.listdir(os.path.join(str(tmp_path), "hypothesis"))  # the example database lives under kbtool's home


@pytest.mark.slow
def test_an_op_that_agrees_everywhere_reports_nothing(tmp_path):
    proc = kbtool("explore", "--op", "sum", "--backend", PLANTED, "--max-examples", "40", "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["failures"] == [] and doc["unexplained"] == 0 and doc["examples"][PLANTED] == 40


@pytest.mark.slow
def test_a_known_difference_is_reported_as_known_and_the_search_goes_on(tmp_path):
    known_file = tmp_path / "known.yaml"
    known_file.write_text(
        f"- op: softmax\n  backend: {PLANTED}\n  case: '*shape=*x*x*x*'\n  match: 'values differ'\n"
        "  reason: planted - softmax on axis 0 of rank 4 doubles\n  count: 1\n"
    )
    proc = kbtool(
        "explore",
        "--op",
        "softmax",
        "--backend",
        PLANTED,
        "--max-examples",
        "200",
        "--known",
        str(known_file),
        "--json",
        home=tmp_path,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, doc  # explained: nothing unexplained is left
    assert doc["failures"] and all(f["known"] for f in doc["failures"])
    assert all(f["known_reason"].startswith("planted") for f in doc["failures"])
    assert doc["examples"][PLANTED] == 200  # the search did not stop at the first known failure


@pytest.mark.slow
def test_text_output_shows_the_minimal_case_and_the_replay_command(explored, tmp_path):
    failure, _ = _only_failure(explored, "softmax")
    proc = kbtool(*shlex.split(failure["repro"])[1:], home=tmp_path)
    assert proc.returncode == 1
    assert f"FAILURE softmax on {PLANTED} (eager mode): fail" in proc.stdout
    assert 'kwargs:  {"axis": 0}' in proc.stdout and "replay:  " + failure["repro"] in proc.stdout


# ---------------------------------------------------------------------------- --save


def _spec_copy(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    shutil.copy(os.path.join(ROOT, "specs", "ops.yaml"), str(folder / "ops.yaml"))
    return folder / "ops.yaml"


@pytest.mark.slow
def test_save_turns_the_failure_into_a_spec_case_that_check_then_fails(explored, tmp_path):
    failure, _ = _only_failure(explored, "softmax")
    spec_file = _spec_copy(tmp_path)
    before = spec_file.read_text()
    argv = shlex.split(failure["repro"])[1:] + ["--spec", str(spec_file), "--save", "--json"]
    proc = kbtool(*argv, home=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (saved,) = json.loads(proc.stdout)["saved"]
    case_id = saved.split(" case ")[1]
    after = spec_file.read_text()
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(added) == 1 and added[0].lstrip().startswith("- {id: " + case_id)
    assert after.replace(added[0] + "\n", "") == before  # nothing else in the file changed
    raw = yaml.safe_load(added[0].strip()[2:])  # the file as a whole was validated before it was written
    assert raw["kwargs"] == {"axis": 0} and raw["inputs"] == failure["inputs"] and "explore" in raw["about"]
    proc = kbtool(
        "check",
        "--op",
        "softmax",
        "--case",
        case_id,
        "--backend",
        PLANTED,
        "--spec",
        str(spec_file),
        "--json",
        home=tmp_path,
    )
    assert proc.returncode == 1
    assert {r["status"] for r in json.loads(proc.stdout)["results"]} == {"fail"}


def test_save_refuses_a_case_that_would_not_validate_and_leaves_the_file(tmp_path):
    spec_file = _spec_copy(tmp_path)
    before = spec_file.read_text()
    with pytest.raises(Exception) as caught:
        save.save_case(str(spec_file), "softmax", {"id": "bad", "inputs": [{"value": [1.0]}], "colour": "red"})
    assert "not saved" in str(caught.value) and "\n" not in str(caught.value)
    assert spec_file.read_text() == before


def test_save_gives_a_taken_id_a_new_number(tmp_path):
    spec_file = _spec_copy(tmp_path)
    raw = {"id": "rank2", "inputs": [{"value": [[1.0, 2.0]], "dtype": "float32"}]}
    assert save.save_case(str(spec_file), "softmax", raw) == "rank2.n2"
    assert save.unique_id("rank2", {"rank2", "rank2.n2"}) == "rank2.n3"
    ids = [c["id"] for c in loader.load(str(spec_file)).ops["softmax"]["cases"]]
    assert ids.count("rank2") == 1 and ids.count("rank2.n2") == 1


# ---------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args, words",
    [
        (["--op", "no_such_op"], "no op 'no_such_op'"),
        (["--op", "mean", "--replay", "{not json"], "--replay takes a case as JSON"),
        (["--op", "mean", "--replay", "[1, 2]"], "JSON object"),
        (
            ["--op", "mean", "--replay", '{"id": "x", "inputs": [{"value": [1.0]}], "kwargs": {"axis": 7}}'],
            "the reference refuses this case",
        ),
        (["--op", "mean", "--max-examples", "0"], "--max-examples"),
        (["--op", "mean", "--backend", "no_such_backend"], "unknown backend"),
        (["--op", "random_uniform_variable"], "nothing to explore"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, words):
    proc = (
        kbtool("explore", *args, "--backend", PLANTED, home=tmp_path)
        if "--backend" not in args
        else kbtool("explore", *args, home=tmp_path)
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------- real backends

AGREEING = [
    ("tensorflow", "abs"),
    ("tensorflow", "dot"),
    ("tensorflow", "concatenate"),
    ("tensorflow", "maximum"),
    ("theano", "abs"),
    ("theano", "dot"),
    ("theano", "concatenate"),
    ("cntk", "hard_sigmoid"),
    ("cntk", "cos"),
    ("cntk", "sqrt"),
]


@pytest.mark.backends
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "theano", "cntk"])
def test_ops_that_agree_today_explore_clean_on_the_real_backends(backend):
    """Ops with no non-passing result in `kbtool check` on that backend: exploration finds nothing unexplained."""
    ops = [op for name, op in AGREEING if name == backend]
    for op in ops:
        environ = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool",
                "explore",
                "--op",
                op,
                "--backend",
                backend,
                "--max-examples",
                "15",
                "--seed",
                "0",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=environ,
            cwd=ROOT,
            timeout=600,
        )
        assert proc.returncode == 0, (op, proc.stdout[-3000:], proc.stderr[-2000:])
        doc = json.loads(proc.stdout)
        assert doc["unexplained"] == 0 and doc["examples"][backend] == 15, (op, doc)


def test_a_draw_at_another_shape_is_explained_by_what_explains_its_case():
    from kbtool.explore.engine import explain_at_template_shape
    from kbtool.results import Result, Status

    entries = [
        {
            "op": ["mean"],
            "case": ["int32_input"],
            "backend": ["tensorflow"],
            "status": ["fail"],
            "match": "dtype int32",
            "reason": "int mean stays int",
            "count": 2,
        }
    ]
    drawn = Result(
        op="mean",
        case="int32_input.shape=1x1",
        backend="tensorflow",
        mode="eager",
        status=Status.FAIL,
        message="dtype int32 != reference float32",
    )
    explain_at_template_shape(drawn, entries)
    assert drawn.known == "int mean stays int (case int32_input at another shape)"
    other = Result(
        op="mean",
        case="int32_input.axis=0",
        backend="tensorflow",
        mode="eager",
        status=Status.FAIL,
        message="dtype int32 != reference float32",
    )
    explain_at_template_shape(other, entries)  # another parameter is another case: not explained
    assert other.known is None
    wrong = Result(
        op="mean",
        case="int32_input.shape=1x1",
        backend="tensorflow",
        mode="eager",
        status=Status.FAIL,
        message="3 of 3 values differ",
    )
    explain_at_template_shape(wrong, entries)  # the entry's message regex still has to hold
    assert wrong.known is None
