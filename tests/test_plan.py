"""The plan stage (kbtool/plan.py): which ops, cases, modes and backends a check runs, decided before anything runs.

No backend environment is needed: backends come from a fake launcher, or are the numpy reference (whose launch
line is built without starting a worker).
"""

import dataclasses

import pytest

from kbtool.errors import KbtoolError
from kbtool.plan import EXAMPLES, MODES, Selection, Sources, checkable_ops, make_plan
from kbtool.runners import registry
from kbtool.runners.base import Launch, Unavailable
from kbtool.settings import RunSettings
from kbtool.specs import loader
from kbtool.specs.cases import cases_for

from .helpers import HEADER

TINY = (
    HEADER
    + """  abs:
    category: math
    summary: a
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: basic, inputs: [{shape: [2, 3]}]}
      - {id: big, inputs: [{shape: [4, 5]}]}
      - {id: eager_only, inputs: [{shape: [2]}], modes: [eager]}
      - {id: symbolic_only, inputs: [{shape: [2]}], modes: [symbolic]}
    examples:
      - id: doc
        docs: [ko-2.2]
        source: ">>> K.eval(K.abs(x))"
        case: {inputs: [{value: [-1.0, 2.0]}]}
        shown: [{docs: [ko-2.2], value: [1.0, 2.0]}]
      - id: text
        docs: [ko-2.2]
        source: ">>> K.abs(x)"
        not_executable: "a repr"
  exp:
    category: math
    summary: e
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: basic, inputs: [{shape: [3]}]}
  sqrt:
    category: math
    summary: s
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    examples:
      - id: doc
        docs: [ko-2.2]
        source: ">>> K.eval(K.sqrt(x))"
        case: {inputs: [{value: [4.0]}], modes: [eager]}
        shown: [{docs: [ko-2.2], value: [2.0]}]
  clear_session:
    category: graph
    summary: c
    documented_in: [ko-2.2]
    signature: []
    not_checkable: "resets global state"
"""
)

BOTH = ("eager", "symbolic")


def reason(name):
    return f"not installed: run `kbtool env install {name}`"


def launch_of(name):
    """The numpy reference's launch line, named `name`: a backend that is installed, whatever its name."""
    return dataclasses.replace(registry.launch_for("numpy"), backend=name)


def fake_launcher(installed, calls=None):
    """name -> a launch line when `installed`, else Unavailable (as registry.launch_for does)."""

    def launch(name):
        if calls is not None:
            calls.append(name)
        if name in installed:
            return launch_of(name)
        raise Unavailable(reason(name))

    return launch


RUN_FIELDS = {f.name for f in dataclasses.fields(RunSettings)}


def planned(spec, sources, **kwargs):
    """make_plan with the selecting keywords as a Selection, the run's as RunSettings."""
    run = {k: v for k, v in kwargs.items() if k in RUN_FIELDS}
    chosen = Selection(**{k: v for k, v in kwargs.items() if k not in RUN_FIELDS})
    return make_plan(spec, chosen, RunSettings(**run), sources)


def plan_of(spec, installed=("numpy",), builtin=("numpy", "tensorflow"), **kwargs):
    return planned(spec, Sources(launcher=fake_launcher(installed), builtin=tuple(builtin)), **kwargs)


def work_of(plan):
    return [(case.op, case.id, tuple(case.modes)) for _, case in plan.work]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(TINY)
    return loader.load(str(path))


def test_tiny_spec_default_plan(tiny):
    plan = plan_of(tiny)
    assert plan.ops == ["abs", "exp", "sqrt"]  # clear_session has nothing to run
    assert work_of(plan) == [
        ("abs", "basic", BOTH),
        ("abs", "big", BOTH),
        ("abs", "eager_only", ("eager",)),
        ("abs", "symbolic_only", ("symbolic",)),
        ("abs", "example:doc", BOTH),
        ("exp", "basic", BOTH),
        ("sqrt", "example:doc", ("eager",)),
    ]
    assert [entry["summary"] for entry, _ in plan.work] == ["a"] * 5 + ["e", "s"]  # each case with its entry
    assert (plan.seed, plan.case_patterns, plan.modes, plan.examples_only, plan.filters) == (0, (), (), False, [])
    assert MODES == ("eager", "symbolic") and EXAMPLES == "example:*"


@pytest.mark.parametrize(
    "ops, examples, expected",
    [
        ((), False, ["abs", "exp", "sqrt"]),  # every op with cases or examples
        ((), True, ["abs", "sqrt"]),  # --examples: the ops with documented examples
        (("exp",), False, ["exp"]),
        (("exp", "abs", "exp", "abs"), False, ["exp", "abs"]),  # named: deduplicated, in the order given
        (("sqrt", "abs", "sqrt"), True, ["sqrt", "abs"]),
        (("abs", "exp"), True, ["abs", "exp"]),  # named ops stay even when one has no example
    ],
)
def test_op_selection(tiny, ops, examples, expected):
    assert plan_of(tiny, ops=ops, examples=examples).ops == expected


@pytest.mark.parametrize(
    "patterns, expected",
    [
        (("basic",), ["basic"]),
        (("b*",), ["basic", "big"]),
        (("big", "basic"), ["basic", "big"]),  # spec order, not pattern order; a case matched twice runs once
        (("b*", "basic"), ["basic", "big"]),
        (("*_only",), ["eager_only", "symbolic_only"]),
        (("?ig",), ["big"]),
        (("example:*",), ["example:doc"]),
        (("*",), ["basic", "big", "eager_only", "symbolic_only", "example:doc"]),
    ],
)
def test_case_globs(tiny, patterns, expected):
    plan = plan_of(tiny, ops=["abs"], case_patterns=patterns)
    assert [case.id for _, case in plan.work] == expected
    assert plan.case_patterns == patterns


@pytest.mark.parametrize(
    "modes, expected",
    [
        (
            ("eager",),
            [("basic", ("eager",)), ("big", ("eager",)), ("eager_only", ("eager",)), ("example:doc", ("eager",))],
        ),  # symbolic_only is left with no mode: dropped
        (
            ("symbolic",),
            [
                ("basic", ("symbolic",)),
                ("big", ("symbolic",)),
                ("symbolic_only", ("symbolic",)),
                ("example:doc", ("symbolic",)),
            ],
        ),
        (
            ("eager", "symbolic"),
            [
                ("basic", BOTH),
                ("big", BOTH),
                ("eager_only", ("eager",)),
                ("symbolic_only", ("symbolic",)),
                ("example:doc", BOTH),
            ],
        ),
        (
            ("symbolic", "eager"),
            [
                ("basic", BOTH),
                ("big", BOTH),
                ("eager_only", ("eager",)),
                ("symbolic_only", ("symbolic",)),
                ("example:doc", BOTH),
            ],
        ),  # the case's own order
    ],
)
def test_modes_filter(tiny, modes, expected):
    plan = plan_of(tiny, ops=["abs"], modes=modes)
    assert [(case.id, tuple(case.modes)) for _, case in plan.work] == expected


def test_modes_filter_does_not_leak_into_the_next_plan(tiny):
    plan_of(tiny, ops=["abs"], modes=["eager"])
    assert work_of(plan_of(tiny, ops=["abs"], case_patterns=["basic"])) == [("abs", "basic", BOTH)]


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, [("abs", "example:doc", BOTH), ("sqrt", "example:doc", ("eager",))]),
        ({"case_patterns": ["*"]}, [("abs", "example:doc", BOTH), ("sqrt", "example:doc", ("eager",))]),
        ({"case_patterns": ["b*", "example:*"]}, [("abs", "example:doc", BOTH), ("sqrt", "example:doc", ("eager",))]),
        ({"ops": ["abs", "exp"]}, [("abs", "example:doc", BOTH)]),
        ({"modes": ["symbolic"]}, [("abs", "example:doc", ("symbolic",))]),
    ],
)
def test_examples_select_only_example_cases(tiny, kwargs, expected):
    plan = plan_of(tiny, examples=True, **kwargs)
    assert work_of(plan) == expected
    assert plan.examples_only is True


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ops": ["abz"]}, "no op 'abz' in {path}; did you mean abs?"),
        ({"ops": ["exp", "sqrtt"]}, "no op 'sqrtt' in {path}; did you mean sqrt?"),
        ({"ops": ["qqqqqq"]}, "no op 'qqqqqq' in {path}"),
        ({"modes": ["eagre"]}, "unknown mode eagre; modes are eager, symbolic"),
        ({"modes": ["eager", "graph", "jit"]}, "unknown mode graph, jit; modes are eager, symbolic"),
        ({"ops": ["abs"], "case_patterns": ["nope"]}, "nothing to check: no case of abs matches --case nope"),
        ({"ops": ["abs"], "case_patterns": ["B*", "BIG"]}, "nothing to check: no case of abs matches --case B* BIG"),
        (
            {"ops": ["exp"], "examples": True},
            "nothing to check: no case of exp matches --examples (no documented example)",
        ),
        (
            {"ops": ["abs"], "case_patterns": ["basic"], "examples": True},
            "nothing to check: no case of abs matches --case basic --examples (no documented example)",
        ),
        ({"ops": ["sqrt"], "modes": ["symbolic"]}, "nothing to check: no case of sqrt matches --mode symbolic"),
        ({"ops": ["clear_session"]}, "nothing to check: no case of clear_session matches"),
        (
            {"ops": ["exp", "clear_session"], "case_patterns": ["zzz"], "modes": ["eager"]},
            "nothing to check: no case of exp, clear_session matches --case zzz --mode eager",
        ),
    ],
)
def test_usage_errors(tiny, kwargs, message):
    calls = []
    with pytest.raises(KbtoolError) as info:
        planned(tiny, Sources(launcher=fake_launcher(["numpy"], calls), builtin=("numpy",)), **kwargs)
    assert str(info.value) == message.format(path=tiny.path)
    assert calls == []  # refused before any backend is looked at


def test_nothing_to_check_names_many_ops_by_count(shipped_spec):
    ops = ["abs", "exp", "sqrt", "dot", "sum", "mean"]
    with pytest.raises(KbtoolError) as info:
        plan_of(shipped_spec, ops=ops, case_patterns=["zzz"])
    assert str(info.value) == "nothing to check: no case of 6 ops matches --case zzz"
    with pytest.raises(KbtoolError) as info:
        plan_of(shipped_spec, ops=ops[:5], case_patterns=["zzz"])
    assert str(info.value) == "nothing to check: no case of abs, exp, sqrt, dot, sum matches --case zzz"


def test_default_backends_list_the_ones_not_installed(tiny):
    plan = plan_of(tiny, installed=["numpy", "theano"], builtin=["numpy", "tensorflow", "theano", "cntk"])
    assert [(s.name, s.launch, s.unavailable) for s in plan.backends] == [
        ("numpy", launch_of("numpy"), None),
        ("tensorflow", None, reason("tensorflow")),
        ("theano", launch_of("theano"), None),
        ("cntk", None, reason("cntk")),
    ]
    assert [s.name for s in plan.runnable] == ["numpy", "theano"]


@pytest.mark.parametrize(
    "named, installed, expected",
    [
        (["tensorflow"], ["tensorflow"], ["tensorflow"]),
        (["tensorflow", "numpy"], ["numpy", "tensorflow"], ["tensorflow", "numpy"]),  # the order given
        (["numpy", "numpy", "my.module", "numpy"], ["numpy", "my.module"], ["numpy", "my.module"]),  # deduplicated
    ],
)
def test_named_backends(tiny, named, installed, expected):
    calls = []
    plan = make_plan(
        tiny,
        Selection(backends=named),
        sources=Sources(launcher=fake_launcher(installed, calls), builtin=["numpy", "cntk"]),
    )
    assert [(s.name, s.launch, s.unavailable) for s in plan.backends] == [(n, launch_of(n), None) for n in expected]
    assert calls == expected  # the built-in list is not consulted when backends are named


@pytest.mark.parametrize("named", [["tensorflow"], ["numpy", "tensorflow"], ["tensorflow", "numpy"]])
def test_named_backend_not_installed_is_an_error(tiny, named):
    with pytest.raises(KbtoolError) as info:
        plan_of(tiny, backends=named, installed=["numpy"])
    assert str(info.value) == "backend tensorflow: " + reason("tensorflow")


def test_no_runnable_backend_is_an_error(tiny):
    with pytest.raises(KbtoolError) as info:
        plan_of(tiny, installed=[], builtin=["numpy", "cntk"])
    assert str(info.value) == "nothing to check: no backend can run here (numpy: {}; cntk: {})".format(
        reason("numpy"), reason("cntk")
    )


def test_launcher_errors_other_than_unavailable_propagate(tiny):
    def launcher(name):
        raise KbtoolError(f"unknown backend {name!r}")

    with pytest.raises(KbtoolError, match="^unknown backend 'mxnet'$"):
        make_plan(tiny, Selection(backends=["mxnet"]), sources=Sources(launcher=launcher, builtin=["numpy"]))


def test_real_registry_numpy_and_uninstalled_builtins(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "empty_home"))
    plan = make_plan(tiny, Selection(backends=["numpy"]))
    (planned_backend,) = plan.backends
    assert isinstance(planned_backend.launch, Launch) and (
        planned_backend.name,
        planned_backend.launch.backend,
        planned_backend.launch.module,
    ) == (
        "numpy",
        "numpy",
        "kbtool.reference",
    )
    plan = make_plan(tiny)  # every built-in backend: only numpy is installed in an empty home
    assert [(s.name, s.launch is not None, s.unavailable) for s in plan.backends] == [("numpy", True, None)] + [
        (
            name,
            False,
            reason(name)
            + {
                "keras3": " (it runs in the tensorflow env)",
                "keras-numpy": " (it runs in the tensorflow1 env)",
                "keras3-tensorflow": " (it runs in the tensorflow env)",
            }.get(name, ""),
        )
        for name in (
            "tensorflow",
            "tensorflow1",
            "theano",
            "cntk",
            "mxnet",
            "plaidml",
            "keras3",
            "keras-numpy",
            "keras3-jax",
            "keras3-torch",
            "keras3-tensorflow",
            "keras3-numpy",
            "keras3-openvino",
        )
    ]
    with pytest.raises(KbtoolError) as info:
        make_plan(tiny, Selection(backends=["numpy", "theano"]))
    assert str(info.value) == "backend theano: " + reason("theano")
    with pytest.raises(KbtoolError, match="unknown backend 'jax'"):
        make_plan(tiny, Selection(backends=["jax"]))


@pytest.mark.parametrize(
    "kwargs, all_cases, whole_spec",
    [
        ({}, True, True),
        ({"ops": ["abs"]}, True, False),
        ({"ops": ["abs", "exp"]}, True, False),
        ({"ops": ["sqrt", "exp", "abs"]}, True, True),
        ({"ops": ["sqrt", "exp", "abs", "clear_session"]}, True, True),
        ({"case_patterns": ["*"]}, False, True),  # a --case filter, even one matching everything
        ({"modes": ["eager"]}, False, True),
        ({"modes": ["eager", "symbolic"]}, False, True),
        ({"examples": True}, False, False),  # only the ops with examples
        ({"ops": ["abs", "exp", "sqrt"], "examples": True}, False, True),
        ({"ops": ["abs"], "case_patterns": ["b*"], "modes": ["eager"]}, False, False),
    ],
)
def test_all_cases_and_whole_spec(tiny, kwargs, all_cases, whole_spec):
    plan = plan_of(tiny, **kwargs)
    assert (plan.all_cases, plan.whole_spec) == (all_cases, whole_spec)


def test_a_default_plan_is_the_whole_spec_even_with_an_op_that_has_nothing_to_run(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(TINY.replace('    not_checkable: "resets global state"\n', ""))
    try:
        spec = loader.load(str(path))
    except loader.SpecError:
        return  # equally fine: the spec is refused (an op must have cases or say why not)
    plan = plan_of(spec)
    assert plan.ops == ["abs", "exp", "sqrt"] and plan.all_cases
    assert plan.whole_spec


@pytest.mark.parametrize(
    "kwargs, filters",
    [
        ({}, []),
        ({"ops": ["abs"]}, []),
        ({"case_patterns": ["b*", "big"]}, ["--case b*", "--case big"]),
        ({"modes": ["eager"]}, ["--mode eager"]),
        ({"modes": ["symbolic", "eager"]}, ["--mode symbolic", "--mode eager"]),
        ({"examples": True}, ["--examples"]),
        (
            {"case_patterns": ["example:*"], "modes": ["eager"], "examples": True},
            ["--case example:*", "--mode eager", "--examples"],
        ),
    ],
)
def test_filters_words(tiny, kwargs, filters):
    plan = plan_of(tiny, **kwargs)
    assert plan.filters == filters
    assert plan.modes == tuple(kwargs.get("modes", ()))


def test_seed_reaches_the_case_inputs(tiny):
    ((_, a0),) = plan_of(tiny, ops=["abs"], case_patterns=["big"]).work
    ((_, b0),) = plan_of(tiny, ops=["abs"], case_patterns=["big"], seed=0).work
    plan7 = plan_of(tiny, ops=["abs"], case_patterns=["big"], seed=7)
    ((_, a7),) = plan7.work
    assert plan7.seed == 7
    assert (a0.arrays[0] == b0.arrays[0]).all()
    assert a0.arrays[0].shape == a7.arrays[0].shape == (4, 5) and not (a0.arrays[0] == a7.arrays[0]).all()


# --- the shipped spec ---


def test_shipped_default_plan_is_every_case_of_every_op(shipped_spec):
    plan = plan_of(shipped_spec)
    assert plan.ops == sorted(checkable_ops(shipped_spec)) == sorted(shipped_spec.ops)
    assert len(plan.work) == sum(len(cases_for(shipped_spec, op)) for op in shipped_spec.ops)
    assert (plan.all_cases, plan.whole_spec) == (True, True)


def test_shipped_examples_plan(shipped_spec):
    plan = plan_of(shipped_spec, examples=True)
    assert plan.ops == sorted(name for name, entry in shipped_spec.ops.items() if entry.get("examples"))
    assert {(case.op, case.id) for _, case in plan.work} == {
        (name, "example:" + example["id"])
        for name, entry in shipped_spec.ops.items()
        for example in entry.get("examples", [])
        if "case" in example
    }
    assert all(case.id.startswith("example:") for _, case in plan.work)
    assert (plan.all_cases, plan.whole_spec) == (False, False)
    batch_dot = plan_of(shipped_spec, ops=["batch_dot"], examples=True, case_patterns=["*"])
    assert [case.id for _, case in batch_dot.work] == [
        "example:" + e["id"] for e in shipped_spec.ops["batch_dot"]["examples"] if "case" in e
    ]


def test_shipped_batch_dot_eager_drops_symbolic_only_cases(shipped_spec):
    every = [case.id for _, case in plan_of(shipped_spec, ops=["batch_dot"]).work]
    eager = plan_of(shipped_spec, ops=["batch_dot"], modes=["eager"])
    ids = [case.id for _, case in eager.work]
    symbolic_only = (
        "keras_test_rank4",
        "keras_test_rank4_ndim_only",
        "keras_test_rank2_ndim_only",
        "none_batch_dim",
        "every_dim_unknown",
        "grad",
    )
    assert set(symbolic_only) <= set(every)
    assert ids == [i for i in every if i not in symbolic_only]
    assert {tuple(case.modes) for _, case in eager.work} == {("eager",)}
    assert (eager.all_cases, eager.whole_spec, eager.filters) == (False, False, ["--mode eager"])


def test_shipped_unknown_op_says_did_you_mean(shipped_spec):
    with pytest.raises(KbtoolError) as info:
        plan_of(shipped_spec, ops=["batch_dott"])
    assert (
        str(info.value)
        == f"no op 'batch_dott' in {shipped_spec.path}; did you mean batch_dot, batch_flatten, ctc_batch_cost?"
    )


def test_a_kbtool_home_that_is_a_file_is_a_configuration_error_before_anything_runs(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("KBTOOL_HOME", str(home))
    with pytest.raises(KbtoolError) as info:
        make_plan(loader.load(), Selection(ops=["dot"], backends=["numpy"]))
    assert str(info.value) == f"KBTOOL_HOME={home} is not a directory"


def test_make_plan_takes_a_selection_and_the_run_settings_as_typed_records(tiny):
    chosen = Selection(ops=["abs"], modes=["eager"])  # lists are kept as tuples
    assert (chosen.ops, chosen.modes) == (("abs",), ("eager",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.ops = ("mean",)
    run = RunSettings(seed=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.seed = 4
    sources = Sources(launcher=fake_launcher(["numpy"]), builtin=("numpy", "tensorflow"))
    plan = make_plan(tiny, chosen, run, sources)
    assert (plan.ops, plan.filters, plan.modes) == (["abs"], ["--mode eager"], ("eager",))
    assert plan.run is run and plan.seed == 3  # the plan carries the run's settings, once
    assert [(e, c.id, c.modes) for e, c in plan.work] == [
        (e, c.id, c.modes) for e, c in plan_of(tiny, ops=["abs"], modes=["eager"], seed=3).work
    ]
    assert [(s.name, s.unavailable) for s in plan.backends] == [
        ("numpy", None),
        ("tensorflow", reason("tensorflow")),
    ]


def test_a_default_plan_with_only_the_reference_says_no_keras_backend_ran(tiny):
    plan = plan_of(tiny)  # numpy installed, tensorflow not
    assert any("only numpy (kbtool's own reference)" in note for note in plan.notes)
    assert not plan_of(tiny, installed=["numpy", "tensorflow"]).notes
    assert not plan_of(tiny, backends=["numpy"]).notes  # asked for: said by the user
