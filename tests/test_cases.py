"""Case expansion (kbtool/specs/cases.py): seeded arrays, tolerances, modes, case fields and worker requests.

Fast and table-driven: entries are small dicts, no backend environment, no shipped spec needed.
"""

import copy
import types
import zlib

import numpy as np
import pytest

from kbtool.specs import binding, loader
from kbtool.specs.cases import DEFAULT_MODES, Case, _rng, cases_for, expand_case, make_array
from kbtool.verdicts.tolerances import GRAD_TOLERANCE, case_overrides

X = [{"name": "x", "kind": "tensor"}]
XY = [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}, {"name": "axis", "default": None}]
XYZ = [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}, {"name": "z", "kind": "tensor"}]
S23 = {"shape": [2, 3]}
BIG = [4000]  # large enough that every value of a small support appears and the bounds are approached


def rng(seed=1):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------------- make_array
# exact contents: literal values, fills, arange (no randomness involved)
@pytest.mark.parametrize(
    "spec,want,dtype",
    [
        ({"value": [[1, 2], [3, 4]]}, [[1.0, 2.0], [3.0, 4.0]], "float32"),
        ({"value": [[1, 2], [3, 4]], "dtype": "int32"}, [[1, 2], [3, 4]], "int32"),
        ({"value": 2.5, "dtype": "float64"}, 2.5, "float64"),
        ({"value": [1, 0, 2], "dtype": "bool"}, [True, False, True], "bool"),
        ({"value": []}, np.zeros((0,)), "float32"),
        # a literal value wins over shape, fill and dist
        ({"value": [7], "shape": [3], "fill": 2, "dist": "arange"}, [7.0], "float32"),
        ({"shape": [2, 3], "fill": 7}, np.full((2, 3), 7.0), "float32"),
        ({"shape": [2], "fill": -1, "dtype": "int64"}, [-1, -1], "int64"),
        ({"shape": [], "fill": 0.5, "dtype": "float16"}, 0.5, "float16"),
        ({"shape": [0, 3], "fill": 1}, np.ones((0, 3)), "float32"),
        # a fill wins over dist
        ({"shape": [3], "fill": 4, "dist": "uniform"}, [4.0, 4.0, 4.0], "float32"),
        ({"shape": [2, 3], "dist": "arange"}, [[0, 1, 2], [3, 4, 5]], "float32"),
        ({"shape": [2, 2], "dist": "arange", "dtype": "int32"}, [[0, 1], [2, 3]], "int32"),
        ({"shape": [], "dist": "arange", "dtype": "float64"}, 0.0, "float64"),
        ({"shape": [2, 0], "dist": "arange"}, np.zeros((2, 0)), "float32"),
        # arange ignores low/high
        ({"shape": [4], "dist": "arange", "low": 10, "high": 20}, [0, 1, 2, 3], "float32"),
    ],
)
def test_make_array_exact(spec, want, dtype):
    out = make_array(spec, rng())
    want = np.asarray(want)
    assert out.dtype == np.dtype(dtype)
    assert out.shape == want.shape
    assert np.array_equal(out, want)


# random draws: exactly the numpy call with the documented default bounds (or the overrides), then cast
@pytest.mark.parametrize(
    "spec,draw",
    [
        ({"shape": [3, 4]}, lambda r: r.standard_normal((3, 4))),
        ({"shape": [3, 4], "dist": "normal", "low": 5, "high": 6}, lambda r: r.standard_normal((3, 4))),
        ({"shape": [5], "dist": "uniform"}, lambda r: r.uniform(-1.0, 1.0, (5,))),
        ({"shape": [5], "dist": "uniform", "low": 0.5}, lambda r: r.uniform(0.5, 1.0, (5,))),
        ({"shape": [5], "dist": "uniform", "high": 4}, lambda r: r.uniform(-1.0, 4, (5,))),
        ({"shape": [5], "dist": "uniform", "low": 2, "high": 3}, lambda r: r.uniform(2, 3, (5,))),
        ({"shape": [5], "dist": "uniform", "low": 0, "high": 0.5}, lambda r: r.uniform(0, 0.5, (5,))),
        ({"shape": [5], "dist": "positive"}, lambda r: r.uniform(0.1, 2.0, (5,))),
        ({"shape": [5], "dist": "positive", "low": 1}, lambda r: r.uniform(1, 2.0, (5,))),
        ({"shape": [5], "dist": "positive", "high": 9}, lambda r: r.uniform(0.1, 9, (5,))),
        ({"shape": [5], "dist": "positive", "low": 0, "high": 0}, lambda r: r.uniform(0, 0, (5,))),
        ({"shape": [6], "dist": "randint"}, lambda r: r.integers(0, 5, (6,))),
        ({"shape": [6], "dist": "randint", "low": -3}, lambda r: r.integers(-3, 5, (6,))),
        ({"shape": [6], "dist": "randint", "high": 100}, lambda r: r.integers(0, 100, (6,))),
        ({"shape": [6], "dist": "randint", "low": 10, "high": 1000}, lambda r: r.integers(10, 1000, (6,))),
        ({"shape": [6], "dist": "ties"}, lambda r: r.choice(np.array([-1.5, -0.5, 0.0, 0.5, 1.5, 2.5]), size=(6,))),
    ],
)
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_make_array_draws_exactly(spec, draw, dtype):
    if dtype:
        spec = dict(spec, dtype=dtype)
    out = make_array(spec, rng(11))
    want = np.asarray(draw(rng(11))).astype(dtype or "float32")
    assert out.dtype == np.dtype(dtype or "float32")
    assert out.shape == want.shape and np.array_equal(out, want)


# bounds and supports, independent of how numpy draws them
@pytest.mark.parametrize(
    "spec,low,high",
    [
        ({"shape": BIG, "dist": "uniform"}, -1.0, 1.0),
        ({"shape": BIG, "dist": "uniform", "low": 2, "high": 3}, 2.0, 3.0),
        ({"shape": BIG, "dist": "uniform", "low": -0.5}, -0.5, 1.0),
        ({"shape": BIG, "dist": "uniform", "high": 0}, -1.0, 0.0),
        ({"shape": BIG, "dist": "positive"}, 0.1, 2.0),
        ({"shape": BIG, "dist": "positive", "low": 5, "high": 6}, 5.0, 6.0),
        ({"shape": BIG, "dist": "positive", "dtype": "float64", "high": 0.2}, 0.1, 0.2),
    ],
)
def test_continuous_bounds(spec, low, high):
    out = make_array(spec, rng(3))
    width = high - low
    assert out.min() >= np.float32(low) and out.max() <= np.float32(high)
    assert out.min() < low + 0.01 * width and out.max() > high - 0.01 * width  # the whole range is used


@pytest.mark.parametrize(
    "spec,support,dtype",
    [
        ({"shape": BIG, "dist": "randint"}, {0, 1, 2, 3, 4}, "float32"),
        ({"shape": BIG, "dtype": "int32"}, {0, 1, 2, 3, 4}, "int32"),  # integer dtypes default to randint 0..5
        ({"shape": BIG, "dtype": "int64"}, {0, 1, 2, 3, 4}, "int64"),
        ({"shape": BIG, "dtype": "uint8"}, {0, 1, 2, 3, 4}, "uint8"),
        ({"shape": BIG, "dtype": "bool"}, {False, True}, "bool"),  # randint 0..5, cast
        ({"shape": BIG, "dtype": "int32", "low": -2, "high": 1}, {-2, -1, 0}, "int32"),
        ({"shape": BIG, "dtype": "int32", "low": 3}, {3, 4}, "int32"),
        ({"shape": BIG, "dtype": "int32", "high": 2}, {0, 1}, "int32"),
        ({"shape": BIG, "dtype": "int32", "low": 2.0, "high": 4.0}, {2, 3}, "int32"),  # YAML numbers: made ints
        ({"shape": BIG, "dtype": "int32", "low": 1.7, "high": 3.9}, {1, 2}, "int32"),  # truncated, not rounded
        ({"shape": BIG, "dist": "randint", "low": 7, "high": 8, "dtype": "float64"}, {7.0}, "float64"),
        ({"shape": BIG, "dist": "ties"}, {-1.5, -0.5, 0.0, 0.5, 1.5, 2.5}, "float32"),
        ({"shape": BIG, "dist": "ties", "dtype": "float64"}, {-1.5, -0.5, 0.0, 0.5, 1.5, 2.5}, "float64"),
        ({"shape": BIG, "dist": "ties", "dtype": "int32"}, {-1, 0, 1, 2}, "int32"),  # cast truncates
    ],
)
def test_discrete_supports(spec, support, dtype):
    out = make_array(spec, rng(5))
    assert out.dtype == np.dtype(dtype)
    assert set(out.ravel().tolist()) == support


def test_default_float_dist_is_standard_normal():
    out = make_array({"shape": [20000]}, rng(9))
    assert out.dtype == np.float32
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1) < 0.05 and out.min() < -3 and out.max() > 3


def test_unknown_dist_falls_back_to_arange():
    assert np.array_equal(make_array({"shape": [3], "dist": "nope"}, rng()), [0, 1, 2])


# ---------------------------------------------------------------------------------------------------- _rng
def first_draw(*key):
    return _rng(*key).standard_normal(4).tolist()


BASE = (0, "dot", "c", 0)


@pytest.mark.parametrize(
    "other",
    [
        (1, "dot", "c", 0),
        (0, "sum", "c", 0),
        (0, "dot", "d", 0),
        (0, "dot", "c", 1),
        (0, "dot", "example:c", 0),
        ("0", "dot", "c", 10),
    ],
)
def test_rng_differs_by_seed_op_case_and_index(other):
    assert first_draw(*other) != first_draw(*BASE)


@pytest.mark.parametrize("key", [BASE, (7, "conv2d", "example:e", 3), ("7", "conv2d", "e", "3")])
def test_rng_is_the_crc32_of_the_key(key):
    # pinned: a change here changes every published input (reports/, reproduce commands)
    assert first_draw(*key) == first_draw(*key)
    crc = zlib.crc32("{}:{}:{}:{}".format(*key).encode())
    assert first_draw(*key) == np.random.default_rng(crc).standard_normal(4).tolist()


def test_rng_golden_value():
    # the key is "seed:op:case:index"; its CRC-32 seeds numpy's default generator
    assert zlib.crc32(b"0:dot:c:0") == 2152434646
    assert _rng(0, "dot", "c", 0).integers(0, 1 << 30) == np.random.default_rng(2152434646).integers(0, 1 << 30)


# ---------------------------------------------------------------------------------------------------- expand_case
def expand(raw, entry=None, signature=X, seed=0, **kw):
    entry = dict({"signature": signature}, **(entry or {}))
    return expand_case("op", entry, dict({"id": "c", "inputs": [S23]}, **raw), seed, **kw)


F32 = {"float32": {"rtol": 1e-5, "atol": 1e-6}}
F64 = {"float64": {"rtol": 1e-9}}
LOOSE32 = {"float32": {"rtol": 0.1}}


@pytest.mark.parametrize(
    "entry_tol,raw,want",
    [
        (None, {}, {}),
        (F32, {}, F32),
        (None, {"tolerance": F64}, F64),
        (F32, {"tolerance": F64}, dict(F32, **F64)),
        # the case's dtype entry replaces the entry's whole dtype entry (no merging inside a dtype)
        (F32, {"tolerance": LOOSE32}, LOOSE32),
        (dict(F32, **F64), {"tolerance": LOOSE32}, dict(LOOSE32, **F64)),
        # gradient cases start from GRAD_TOLERANCE, never from the entry's tolerance
        (None, {"grad": True}, {"float32": {"rtol": 2e-3, "atol": 2e-3}, "float64": {"rtol": 1e-6, "atol": 1e-6}}),
        (F32, {"grad": True}, {"float32": {"rtol": 2e-3, "atol": 2e-3}, "float64": {"rtol": 1e-6, "atol": 1e-6}}),
        (
            F32,
            {"grad": True, "tolerance": LOOSE32},
            {"float32": {"rtol": 0.1}, "float64": {"rtol": 1e-6, "atol": 1e-6}},
        ),
        (
            None,
            {"grad": True, "tolerance": {"float16": {"atol": 1}}},
            {"float32": {"rtol": 2e-3, "atol": 2e-3}, "float64": {"rtol": 1e-6, "atol": 1e-6}, "float16": {"atol": 1}},
        ),
        (F32, {"grad": False}, F32),
    ],
)
def test_tolerance(entry_tol, raw, want):
    entry = {"tolerance": copy.deepcopy(entry_tol)} if entry_tol is not None else {}
    before = copy.deepcopy(GRAD_TOLERANCE)
    case = expand(raw, entry)
    overrides = case_overrides(case)  # what the verdict judges the case's values with
    assert overrides == want
    # the case keeps the spec's own overrides: a gradient case's are its own only (never the entry's)
    assert case.tolerance == (raw.get("tolerance", {}) if raw.get("grad") else want)
    # neither the entry nor the shared GRAD_TOLERANCE is modified
    assert GRAD_TOLERANCE == before and entry.get("tolerance") == entry_tol
    assert overrides is not GRAD_TOLERANCE and case.tolerance is not entry.get("tolerance")


@pytest.mark.parametrize(
    "raw,want",
    [
        ({}, ["eager", "symbolic"]),
        ({"grad": False}, ["eager", "symbolic"]),
        ({"grad": True}, ["symbolic"]),  # K.gradients needs a graph
        ({"modes": ["eager"]}, ["eager"]),
        ({"modes": ["symbolic", "eager"]}, ["symbolic", "eager"]),
        ({"grad": True, "modes": ["eager", "symbolic"]}, ["eager", "symbolic"]),
        ({"modes": []}, []),
    ],
)
def test_modes(raw, want):
    case = expand(raw)
    assert case.modes == want and type(case.modes) is list


def test_default_modes_constant():
    assert DEFAULT_MODES == ("eager", "symbolic")
    expand({}).modes.append("x")
    assert DEFAULT_MODES == ("eager", "symbolic") and expand({}).modes == ["eager", "symbolic"]


DEFAULTS = {
    "raises": None,
    "match": None,
    "stats": None,
    "grad": False,
    "observe": False,
    "then": [],
    "then_only": False,
    "expect_backend_name": False,
    "shown": [],
    "about": "",
}


@pytest.mark.parametrize(
    "raw,changed",
    [
        ({}, {}),
        ({"raises": "ValueError"}, {"raises": "ValueError"}),
        ({"raises": "ValueError", "match": "rank"}, {"raises": "ValueError", "match": "rank"}),
        ({"stats": {"mean": 0}}, {"stats": {"mean": 0}}),
        ({"grad": True}, {"grad": True}),
        ({"observe": True}, {"observe": True}),
        ({"then_only": True}, {"then_only": True}),
        ({"expect_backend_name": True}, {"expect_backend_name": True}),
        ({"about": "why"}, {"about": "why"}),
        ({"then": [{"op": "shape"}]}, {"then": [{"op": "shape", "args": []}]}),
        (
            {"then": [{"op": "get_value", "args": [{"result": 0}]}]},
            {"then": [{"op": "get_value", "args": [{"result": 0}]}]},
        ),
        # literals are wrapped; only a mapping whose sole key is `result` refers to a result
        (
            {"then": [{"op": "sum", "args": [{"result": 1}, 2, "x", None, [1, 2]]}, {"op": "eval"}]},
            {
                "then": [
                    {
                        "op": "sum",
                        "args": [{"result": 1}, {"value": 2}, {"value": "x"}, {"value": None}, {"value": [1, 2]}],
                    },
                    {"op": "eval", "args": []},
                ]
            },
        ),
        (
            {"then": [{"op": "f", "args": [{"result": 0, "axis": 1}, {"value": 3}, {}]}]},
            {
                "then": [
                    {"op": "f", "args": [{"value": {"result": 0, "axis": 1}}, {"value": {"value": 3}}, {"value": {}}]}
                ]
            },
        ),
    ],
)
def test_case_fields(raw, changed):
    case = expand(raw)
    want = dict(DEFAULTS, **changed)
    got = {name: getattr(case, name) for name in want}
    assert got == want
    for name in ("grad", "observe", "then_only", "expect_backend_name"):  # booleans, not just falsy/truthy
        assert type(got[name]) is bool
    assert type(case.about) is str
    assert (case.op, case.id) == ("op", "c")


def test_case_id_argument_wins_and_seeds_the_arrays():
    raw = {"id": "c", "inputs": [S23, {"shape": [4], "dist": "uniform"}]}
    case = expand_case("op", {"signature": XY}, raw, 5, case_id="example:c")
    assert case.id == "example:c"
    want = [make_array(inp, _rng(5, "op", "example:c", i)) for i, inp in enumerate(raw["inputs"])]
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(case.arrays, want))
    plain = expand_case("op", {"signature": XY}, raw, 5)
    assert plain.id == "c" and not np.array_equal(plain.arrays[0], case.arrays[0])


@pytest.mark.parametrize("seed,op,case_id", [(0, "op", "c"), (1, "op", "c"), (0, "other", "c"), (0, "op", "d")])
def test_arrays_are_drawn_per_seed_op_case_and_index(seed, op, case_id):
    raw = {"id": case_id, "inputs": [S23, S23, {"value": [1, 2]}]}
    case = expand_case(op, {"signature": XYZ}, raw, seed)
    want = [make_array(inp, _rng(seed, op, case_id, i)) for i, inp in enumerate(raw["inputs"])]
    assert len(case.arrays) == 3
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(case.arrays, want))
    assert not np.array_equal(case.arrays[0], case.arrays[1])
    assert np.array_equal(case.arrays[2], [1.0, 2.0])
    again = expand_case(op, {"signature": XYZ}, raw, seed)
    assert all(np.array_equal(a, b) for a, b in zip(case.arrays, again.arrays))
    if (seed, op, case_id) != (0, "op", "c"):
        base = expand_case("op", {"signature": XYZ}, dict(raw, id="c"), 0)
        assert not np.array_equal(case.arrays[0], base.arrays[0])


def test_binding_results_are_carried():
    raw = {"id": "c", "inputs": [S23, {"shape": [3, 4], "none_dims": [1]}], "kwargs": {"axis": 1}}
    case = expand_case("dot", {"signature": XY}, raw, 0)
    assert case.args == [{"tensor": 0}, {"tensor": 1, "ph_shape": [3, None]}, {"value": 1}]
    assert case.kwargs == {}
    assert case.tensor_indices == [0, 1]
    assert case.shape_names == {"x": [2, 3], "y": [3, 4], "axis": 1}


def test_binding_errors_propagate():
    with pytest.raises(binding.BindingError) as info:
        expand({"kwargs": {"nope": 1}})
    assert info.value.path == ["kwargs", "nope"]
    assert str(info.value) == "kwargs.nope: 'nope' is not a parameter of op (x)"  # names the op being expanded


# ---------------------------------------------------------------------------------------------------- Case.request
def request_of(**fields):
    case = Case(
        op="dot", id="c", arrays=[], args=[{"tensor": 0}], kwargs={"axes": {"value": 1}}, modes=["eager"], **fields
    )
    return case


REQUEST = {
    "cmd": "run",
    "op": "dot",
    "args": [{"tensor": 0}],
    "kwargs": {"axes": {"value": 1}},
    "grad": False,
    "observe": False,
    "then": [],
    "then_only": False,
}


@pytest.mark.parametrize(
    "fields,mode,extra",
    [
        ({}, "eager", {}),
        ({}, "symbolic", {}),
        (
            {"grad": True, "observe": True, "then_only": True, "then": [{"op": "shape", "args": []}]},
            "symbolic",
            {"grad": True, "observe": True, "then_only": True, "then": [{"op": "shape", "args": []}]},
        ),
        ({"stats": {"mean": 0}}, "eager", {}),
        ({"stats": {"reproducible": False}}, "eager", {}),
        ({"stats": {"reproducible": True}}, "eager", {"repeat": 2}),  # the same seeded call twice
        ({"stats": {"reproducible": True, "mean": 0}}, "symbolic", {"repeat": 2}),
        ({"stats": {}}, "eager", {}),
        # fields the worker never sees
        (
            {
                "raises": "ValueError",
                "match": "x",
                "tolerance": F32,
                "expect_backend_name": True,
                "about": "a",
                "shown": [{"docs": ["ko-2.2"]}],
            },
            "eager",
            {},
        ),
    ],
)
def test_request(fields, mode, extra):
    assert request_of(**fields).request(mode) == dict(REQUEST, mode=mode, **extra)


def test_request_from_an_expanded_case():
    case = expand({"kwargs": {}, "stats": {"reproducible": True}, "observe": True})
    assert case.request("eager") == {
        "cmd": "run",
        "op": "op",
        "mode": "eager",
        "args": [{"tensor": 0}],
        "kwargs": {},
        "grad": False,
        "observe": True,
        "then": [],
        "then_only": False,
        "repeat": 2,
    }


# ---------------------------------------------------------------------------------------------------- cases_for
SHOWN = [{"docs": ["ko-2.2"], "value": [1.0]}]


def spec_of(**entry):
    return types.SimpleNamespace(ops={"op": dict({"signature": XY}, **entry)})


ENTRY = {
    "tolerance": F32,
    "cases": [{"id": "a", "inputs": [S23, S23]}, {"id": "b", "inputs": [S23], "modes": ["eager"]}],
    "examples": [
        {"id": "e1", "docs": ["ko-2.2"], "source": "op(x)", "case": {"inputs": [S23], "about": "ex"}, "shown": SHOWN},
        {"id": "skip", "docs": ["ko-2.2"], "source": "op(x)", "not_executable": "no"},
        {"id": "e2", "docs": ["ko-2.2"], "source": "op(x)", "case": {"id": "ignored", "inputs": [S23]}},
    ],
}


@pytest.mark.parametrize(
    "kwargs,ids",
    [
        ({}, ["a", "b", "example:e1", "example:e2"]),
        ({"include_examples": True}, ["a", "b", "example:e1", "example:e2"]),
        ({"include_examples": False}, ["a", "b"]),
        ({"seed": 4}, ["a", "b", "example:e1", "example:e2"]),
    ],
)
def test_cases_for_ids(kwargs, ids):
    assert [c.id for c in cases_for(spec_of(**ENTRY), "op", **kwargs)] == ids


def test_cases_for_examples_carry_shown_and_their_own_fields():
    cases = {c.id: c for c in cases_for(spec_of(**ENTRY), "op")}
    assert cases["example:e1"].shown == SHOWN and cases["example:e1"].shown is not SHOWN
    assert cases["example:e1"].about == "ex"
    assert cases["example:e2"].shown == [] and cases["a"].shown == [] and cases["b"].shown == []
    assert cases["example:e1"].tolerance == F32 and cases["example:e1"].modes == ["eager", "symbolic"]
    assert cases["b"].modes == ["eager"]
    assert all(c.op == "op" for c in cases.values())


@pytest.mark.parametrize("seed", [None, 0, 4])
def test_cases_for_seeds_cases_and_examples(seed):
    spec = spec_of(**ENTRY)
    cases = {c.id: c for c in (cases_for(spec, "op") if seed is None else cases_for(spec, "op", seed=seed))}
    seed = seed or 0
    for case_id, key, n in [
        ("a", "a", 2),
        ("b", "b", 1),
        ("example:e1", "example:e1", 1),
        ("example:e2", "example:e2", 1),
    ]:
        assert len(cases[case_id].arrays) == n
        for i, array in enumerate(cases[case_id].arrays):
            assert np.array_equal(array, make_array(S23, _rng(seed, "op", key, i)))


@pytest.mark.parametrize(
    "entry,ids",
    [
        ({}, []),
        ({"cases": []}, []),
        ({"examples": [{"id": "e", "docs": ["ko-2.2"], "source": "s", "not_executable": "why"}]}, []),
        ({"examples": [{"id": "e", "docs": ["ko-2.2"], "source": "s", "case": {"inputs": [S23]}}]}, ["example:e"]),
    ],
)
def test_cases_for_sparse_entries(entry, ids):
    assert [c.id for c in cases_for(spec_of(**entry), "op")] == ids


def test_cases_for_does_not_modify_the_spec():
    entry = copy.deepcopy(ENTRY)
    spec = spec_of(**entry)
    cases_for(spec, "op")
    assert spec.ops["op"] == dict({"signature": XY}, **ENTRY)


HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
  op:
    category: math
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    tolerance: {float32: {rtol: 0.5}}
    cases:
      - {id: g, inputs: [{shape: [2], dist: positive}], grad: true}
      - {id: r, inputs: [{shape: [3], dtype: int32}], stats: {reproducible: true, mean: [0, 5]}, modes: [eager]}
    examples:
      - id: e
        docs: [ko-2.2]
        source: op(x)
        case: {inputs: [{value: [1, 2]}]}
        shown: [{docs: [ko-2.2], value: 2}]
"""


def test_cases_from_a_loaded_spec(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER)
    g, r, e = cases_for(loader.load(str(path)), "op", seed=2)
    assert (g.id, g.modes, case_overrides(g), g.grad) == ("g", ["symbolic"], GRAD_TOLERANCE, True)
    assert g.arrays[0].dtype == np.float32 and ((g.arrays[0] >= 0.1) & (g.arrays[0] <= 2)).all()
    assert (r.modes, r.tolerance, r.request("eager")["repeat"]) == (["eager"], {"float32": {"rtol": 0.5}}, 2)
    assert r.arrays[0].dtype == np.int32 and set(r.arrays[0].tolist()) <= {0, 1, 2, 3, 4}
    assert e.id == "example:e" and e.shown == [{"docs": ["ko-2.2"], "value": 2}]
    assert np.array_equal(e.arrays[0], np.array([1, 2], dtype="float32")) and e.arrays[0].dtype == np.float32


# ---------------------------------------------------------------------------------------------------- case_ids
@pytest.mark.parametrize(
    "entry,ids",
    [
        (ENTRY, ["a", "b", "example:e1", "example:e2"]),
        ({}, []),
        ({"cases": [{"id": "only"}]}, ["only"]),
        ({"examples": [{"id": "e", "docs": ["ko-2.2"], "source": "s", "not_executable": "why"}]}, []),
        ({"examples": [{"id": "e", "docs": ["ko-2.2"], "source": "s", "case": {"inputs": [S23]}}]}, ["example:e"]),
    ],
)
def test_case_ids(entry, ids):
    from kbtool.specs.cases import case_ids

    assert case_ids(spec_of(**entry), "op") == ids


def test_case_ids_are_the_ids_cases_for_gives():
    from kbtool.specs.cases import case_ids

    spec = spec_of(**ENTRY)
    assert case_ids(spec, "op") == [c.id for c in cases_for(spec, "op")]
