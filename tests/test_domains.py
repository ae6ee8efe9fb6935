"""Parameter domains, generated grids and coverage (kbtool/specs/domains.py, coverage.py): no backend needed."""

import itertools

import pytest

from kbtool.specs import coverage, domains
from kbtool.specs.loader import Spec

DOMS = {"a": [1, 2, 3], "b": ["x", "y"], "c": [None, True, False]}


def pairs_of(rows, names):
    out = set()
    for row in rows:
        for p, q in itertools.combinations(names, 2):
            out.add(((p, domains.normal(row[p])), (q, domains.normal(row[q]))))
    return out


def test_pairwise_rows_hold_every_pair_and_fewer_rows_than_the_grid():
    rows = domains.pairwise_rows(DOMS)
    full = domains.full_rows(DOMS)
    assert len(full) == 18 and 9 <= len(rows) < 18  # 3 x 3 pairs of a and c need at least 9 rows
    assert pairs_of(rows, list(DOMS)) == pairs_of(full, list(DOMS))
    assert rows == domains.pairwise_rows(DOMS)  # deterministic


def test_one_dimension_gives_each_value_once():
    assert domains.pairwise_rows({"padding": ["valid", "same"]}) == [{"padding": "valid"}, {"padding": "same"}]


def test_excluded_rows_are_never_generated_and_their_pairs_not_required():
    rule = [{"when": "a == 3 and b == 'y'", "why": "refused"}]
    rows = domains.pairwise_rows(DOMS, rule)
    assert not any(r["a"] == 3 and r["b"] == "y" for r in rows)
    possible, impossible = domains.required_pairs(DOMS, rule)
    assert impossible == {(("a", 3), ("b", "y"))}
    assert pairs_of(rows, list(DOMS)) == possible


def test_a_rule_that_cannot_evaluate_is_a_domain_error():
    with pytest.raises(domains.DomainError, match="does not evaluate"):
        domains.full_rows(DOMS, [{"when": "a + b", "why": "?"}])


def test_a_grid_too_large_is_refused():
    with pytest.raises(domains.DomainError, match="rows"):
        domains.full_rows({str(i): list(range(10)) for i in range(6)})


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "none"),
        (True, "true"),
        ([2, 1], "2x1"),
        ({"tuple": [0, 2]}, "(0x2)"),
        (-1, "-1"),
        (0.001, "0.001"),
        ([], "empty"),
    ],
)
def test_labels_in_generated_ids(value, text):
    assert domains.label(value) == text


def test_a_tuple_param_treats_list_and_tuple_forms_alike_and_others_do_not():
    assert domains.normal({"tuple": [1, 2]}, as_tuple_param=True) == domains.normal([1, 2])
    assert domains.normal({"tuple": [1, 2]}) != domains.normal([1, 2])
    assert domains.normal(1) != domains.normal(True)


@pytest.mark.parametrize(
    "items, want",
    [
        ([], {}),
        (["floatx=float64"], {"floatx": "float64"}),
        (
            ["image_data_format=channels_first", "epsilon=1e-3"],
            {"image_data_format": "channels_first", "epsilon": 1e-3},
        ),
    ],
)
def test_keras_config_override(items, want):
    assert domains.parse_override(items) == want


@pytest.mark.parametrize(
    "item, words",
    [
        ("floatx", "KEY=VALUE"),
        ("backend=theano", "KEY one of"),
        ("floatx=float8", "one of float16"),
        ("epsilon=-1", "positive"),
        ("epsilon=nan", "positive"),
        ("image_data_format=nhwc", "channels_first"),
    ],
)
def test_bad_keras_config_override_is_one_line(item, words):
    with pytest.raises(domains.DomainError) as exc:
        domains.parse_override([item])
    assert words in str(exc.value) and "\n" not in str(exc.value)


def spec_with(entry, named=None):
    return Spec(
        "x.yaml",
        {
            "docs": {},
            "domains": named
            or {"padding": ["valid", "same"], "image_data_format": ["channels_last", "channels_first"]},
            "ops": {"op": entry},
        },
    )


CONV = {
    "signature": [
        {"name": "x", "kind": "tensor"},
        {"name": "padding", "default": "valid", "domain": "padding"},
        {"name": "data_format", "default": None, "domain": [None, "channels_last", "channels_first"]},
    ],
    "reads_config": ["image_data_format"],
    "grid": {
        "inputs": {"x": {"shape": [2, 5, 4, 3], "layout": "channels"}},
        "raises": [
            {"when": "padding == 'same' and fmt == 'channels_first' and data_format is None", "type": "ValueError"}
        ],
    },
}


def test_grid_cases_transpose_channels_and_carry_their_keras_config():
    raws = domains.grid_cases(spec_with(CONV), "op")
    assert all(r["id"].startswith("grid.padding=") for r in raws)
    by_fmt = {}
    for raw in raws:
        fmt = raw["kwargs"]["data_format"] or raw.get("keras_config", {}).get("image_data_format")
        by_fmt.setdefault(fmt, []).append(raw["inputs"]["x"]["shape"])
        assert raw.get("keras_config", {}).get("image_data_format") in ("channels_last", "channels_first")
    assert set(map(tuple, by_fmt["channels_first"])) == {(2, 3, 5, 4)}
    assert set(map(tuple, by_fmt["channels_last"])) == {(2, 5, 4, 3)}
    raising = [r for r in raws if r.get("raises")]
    assert raising and all(
        r["kwargs"]["padding"] == "same"
        and r["kwargs"]["data_format"] is None
        and r["keras_config"]["image_data_format"] == "channels_first"
        for r in raising
    )


def test_config_domains_come_from_the_spec_and_unknown_domain_names_fail():
    spec = spec_with(CONV)
    assert domains.config_domains(spec, "op") == {"image_data_format": ["channels_last", "channels_first"]}
    bad = spec_with(dict(CONV, signature=[{"name": "padding", "domain": "paddings"}]))
    with pytest.raises(domains.DomainError, match="unknown domain 'paddings'"):
        domains.param_domains(bad, "op")


def test_coverage_lists_what_no_case_exercises_and_the_grid_fills_it():
    entry = {k: v for k, v in CONV.items() if k != "grid"}
    entry["cases"] = [
        {"id": "valid", "inputs": [{"shape": [1, 3, 3, 1]}]},
        {"id": "raises", "inputs": [{"shape": [1, 3, 3, 1]}], "kwargs": {"padding": "same"}, "raises": "ValueError"},
    ]
    report = coverage.coverage(spec_with(entry))
    missing = [item["values"] for item in report["unexercised"]]
    assert {"padding": "same"} in missing  # a case that raises exercises an error path, not the value
    assert {"data_format": "channels_first"} in missing
    assert report["documented_values"] == 2 + 3 + 2
    assert coverage.coverage(spec_with(CONV))["unexercised"] == []


def test_coverage_counts_pairs_not_just_values():
    entry = {
        "signature": [{"name": "a", "domain": [1, 2]}, {"name": "b", "domain": [True, False]}],
        "cases": [{"id": "c1", "kwargs": {"a": 1, "b": True}}, {"id": "c2", "kwargs": {"a": 2, "b": False}}],
    }
    report = coverage.coverage(spec_with(entry))
    assert report["exercised_values"] == report["documented_values"] == 4
    assert sorted(map(repr, (i["values"] for i in report["unexercised"]))) == sorted(
        [repr({"a": 1, "b": False}), repr({"a": 2, "b": True})]
    )


def test_the_shipped_spec_generates_grids_that_validate_and_cover():
    from kbtool.specs import loader

    spec = loader.load()
    report = coverage.coverage(spec)
    assert report["documented_values"] > 0
    assert report["unexercised"] == [], coverage.render(report)[:20]


# ---------------------------------------------------------------- pinned details (mutation testing found them loose)

PARAMS = {
    "signature": [
        {"name": "x", "kind": "tensor"},
        {"name": "a", "domain": [1, 2]},
        {"name": "b", "kind": "value", "free": "any float"},
        {"name": "c", "kind": "value"},
        {"name": "*args"},
    ],
    "cases": [{"id": "one", "kwargs": {"a": 1}}, {"id": "two", "kwargs": {"a": 2}}],
}


def test_undeclared_and_free_parameters_are_told_apart():
    spec = spec_with(PARAMS)
    assert coverage.undeclared(spec, "op") == ["c"] and coverage.free(spec, "op") == ["b"]
    report = coverage.coverage(spec)
    assert report["undeclared"] == {"op": ["c"]} and report["free_parameters"] == 1
    assert report["ops"]["op"]["values"] == [2, 2] and report["ops"]["op"]["pairs"] == [0, 0]


def test_aliases_unchecked_ops_and_ops_without_parameters_are_left_out():
    spec = Spec(
        "x.yaml",
        {
            "docs": {},
            "domains": {},
            "ops": {
                "op": PARAMS,
                "alias": dict(PARAMS, alias_of="op"),
                "side": dict(PARAMS, not_checkable="side effects"),
                "bare": {"signature": [{"name": "x", "kind": "tensor"}]},
            },
        },
    )
    assert list(coverage.coverage(spec)["ops"]) == ["op"]
    assert list(coverage.coverage(spec, ["bare"])["ops"]) == []


def test_coverage_totals_and_the_excluded_pairs():
    entry = {
        "signature": [{"name": "a", "domain": [1, 2]}, {"name": "b", "domain": ["x", "y"]}],
        "grid": {"inputs": {}, "exclude": [{"when": "a == 2 and b == 'y'", "why": "refused"}]},
    }
    report = coverage.coverage(spec_with(entry))
    assert (report["documented_values"], report["exercised_values"]) == (4, 4)
    assert (report["documented_pairs"], report["exercised_pairs"]) == (3, 3)
    assert report["excluded"] == [{"op": "op", "values": {"a": 2, "b": "y"}}] and report["unexercised"] == []


def test_render_lists_each_gap_then_the_totals():
    entry = {
        "signature": [{"name": "a", "domain": [1, 2]}, {"name": "b", "domain": [True, False]}],
        "cases": [{"id": "c1", "kwargs": {"a": 1, "b": True}}],
    }
    lines = coverage.render(coverage.coverage(spec_with(entry)))
    assert lines[:2] == ["op: a=2", "op: b=false"] and len(lines) == 4  # a pair with a missing value: listed once
    assert lines[-2].startswith("documented values: 2 of 4 exercised; pairs of values: 1 of 4 (0 excluded")
    assert lines[-2].endswith(f"{len(lines) - 2} unexercised")
    assert lines[-1] == (
        "dimensions with a documented domain (parameters and keras.json settings): 2; "
        "free parameters (any value of a type): 0"
    )
    undeclared_lines = coverage.render(coverage.coverage(spec_with(PARAMS)))
    assert undeclared_lines[-1] == "value parameters with no documented domain: 1 in 1 ops"


@pytest.mark.parametrize(
    "items, want",
    [
        ([" floatx = float64 "], {"floatx": "float64"}),
        (["epsilon=1e-3", "epsilon=0.5"], {"epsilon": 0.5}),
        (["image_data_format=channels_last"], {"image_data_format": "channels_last"}),
    ],
)
def test_keras_config_override_details(items, want):
    got = domains.parse_override(items)
    assert got == want and all(type(got[k]) is type(want[k]) for k in want)


def test_bad_override_messages_name_what_was_given():
    with pytest.raises(domains.DomainError, match=r"got 'colour=red'"):
        domains.parse_override(["colour=red"])
    with pytest.raises(domains.DomainError, match=r"epsilon takes a positive number \(got 'x'\)"):
        domains.parse_override(["epsilon=x"])
    with pytest.raises(domains.DomainError, match=r"floatx is one of float16, float32, float64 \(got 'int8'\)"):
        domains.parse_override(["floatx=int8"])


@pytest.mark.parametrize(
    "value, want",
    [
        ([1, [2, None]], ("list", 1, ("list", 2, None))),
        ({"tuple": [1]}, ("tuple", ("list", 1))),
        (1.5, 1.5),
        ("same", "same"),
        (None, None),
        (False, ("bool", False)),
        ({"step": "add"}, repr({"step": "add"})),
    ],
)
def test_normal_forms(value, want):
    assert domains.normal(value) == want


def test_grid_cases_carry_fixed_kwargs_checks_and_the_first_raise_that_holds():
    entry = {
        "signature": [{"name": "a", "domain": [1, 2]}, {"name": "t", "domain": [{"tuple": [0, 1]}, None]}],
        "grid": {
            "inputs": {"x": {"shape": [2]}},
            "kwargs": {"k": 3},
            "modes": ["eager"],
            "tolerance": {"float32": {"rtol": 0.1}},
            "stats": {"mean": [0, 1]},
            "then": [{"op": "dtype", "args": [{"result": 0}]}],
            "then_only": True,
            "exclude": [{"when": "t == [0, 1] and a == 2", "why": "a tuple is a list to a rule"}],
            "raises": [{"when": "a == 1 and t is None", "type": "ValueError"}, {"when": "a == 1", "type": "TypeError"}],
        },
    }
    raws = domains.grid_cases(spec_with(entry), "op")
    assert [r["id"] for r in raws] == ["grid.a=1.t=(0x1)", "grid.a=1.t=none", "grid.a=2.t=none"]
    first = raws[0]
    assert first["kwargs"] == {"k": 3, "a": 1, "t": {"tuple": [0, 1]}} and "keras_config" not in first
    assert (first["modes"], first["stats"], first["then_only"]) == (["eager"], {"mean": [0, 1]}, True)
    assert first["tolerance"] == {"float32": {"rtol": 0.1}} and first["then"][0]["op"] == "dtype"
    assert [r.get("raises") for r in raws] == ["TypeError", "ValueError", None]
    assert domains.grid_cases(spec_with({"signature": []}), "op") == []


def test_grid_params_choose_the_dimensions():
    entry = dict(CONV, grid=dict(CONV["grid"], params=["padding"], raises=[]))
    raws = domains.grid_cases(spec_with(entry), "op")
    assert [r["id"] for r in raws] == ["grid.padding=valid", "grid.padding=same"]
    assert all("keras_config" not in r and r["inputs"]["x"]["shape"] == [2, 5, 4, 3] for r in raws)


def test_cases_exercise_defaults_tuple_forms_and_examples():
    entry = {
        "signature": [
            {"name": "s", "tuple": True, "default": [1, 1], "domain": [[1, 1], {"tuple": [2, 2]}]},
            {"name": "k", "default": False, "domain": [False, True]},
        ],
        "cases": [{"id": "plain"}, {"id": "listed", "kwargs": {"s": [2, 2], "k": True}}],
        "examples": [{"id": "doc", "case": {"kwargs": {"k": True}}}],
    }
    report = coverage.coverage(spec_with(entry))
    # plain: s=(1, 1) by default, k=False; listed: a list for a tuple parameter is its tuple form; doc: s=1x1, k=True
    assert report["exercised_values"] == report["documented_values"] == 4
    assert [i["values"] for i in report["unexercised"]] == [{"s": {"tuple": [2, 2]}, "k": False}]
    without_example = dict(entry, examples=[])
    assert {"s": [1, 1], "k": True} in [
        i["values"] for i in coverage.coverage(spec_with(without_example))["unexercised"]
    ]


def test_greedy_pairwise_picks_the_row_covering_most_and_the_grid_limit_is_exact():
    assert len(domains.pairwise_rows(DOMS)) == 9  # the least possible: a and c alone have 3 x 3 pairs
    limit = domains.MAX_GRID_ROWS
    assert len(domains.full_rows({"one": [1], "many": list(range(limit))})) == limit
    with pytest.raises(domains.DomainError, match=f"{limit + 1:,} rows"):
        domains.full_rows({"one": [1], "many": list(range(limit + 1))})


def test_full_grid_expands_every_allowed_row():
    entry = {
        "signature": [
            {"name": "a", "domain": [1, 2, 3]},
            {"name": "b", "domain": ["x", "y"]},
            {"name": "c", "domain": [True, False]},
        ],
        "grid": {"inputs": {}, "exclude": [{"when": "a == 3 and b == 'y'", "why": "refused"}]},
    }
    spec = spec_with(entry)
    full = domains.grid_cases(spec, "op", "full")
    assert len(full) == 12 - 2 and len(domains.grid_cases(spec, "op")) < len(full)
    assert domains.grid_cases(spec, "op") == domains.grid_cases(spec, "op", "pairwise")


def test_a_parameter_without_a_kind_is_a_value_parameter():
    spec = spec_with({"signature": [{"name": "x", "kind": "tensor"}, {"name": "plain"}]})
    assert coverage.undeclared(spec, "op") == ["plain"]
