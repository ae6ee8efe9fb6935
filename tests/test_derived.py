"""Derived backends: a custom module run in a managed env (`mod@ENV`) inherits the known differences of ENV's own
backend for every function that is the base's very object, and nothing for a function it redefines.

The fast tests use kbtool's own Python: the worker's identity check on module objects, the hello's verdict per op,
and a whole check in which a planted module plays the base backend (named tensorflow, so the known entries name
it). The `backends` test runs a module re-exporting tf_keras as `mod@tensorflow` against `--backend tensorflow`.
"""

import importlib
import json
import sys
import types

import pytest

from kbtool import known
from kbtool.check.run import run_check
from kbtool.paths import CHECKOUT_ROOT
from kbtool.plan import Selection, Sources, make_plan
from kbtool.reports.merge import merge
from kbtool.reports.report import Report, dumps, validate
from kbtool.results import Result, Status
from kbtool.runners import custom
from kbtool.runners.base import Launch
from kbtool.worker import inherit


def _module(name, **attrs):
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _f():
    pass


def _g():
    pass


def _h():
    pass


def test_compare_shares_only_the_very_same_function_objects():
    base = _module("base", abs=_f, mean=_g, only_base=_h, floatx_value=0.5, _private=_f)
    mine = _module("mine", abs=_f, mean=lambda x: x, only_mine=_h, _private=_g, constant=3)
    shared, differ = inherit.compare(mine, [base])
    assert shared == ["abs"]  # the same object; mean is another function with the same name
    assert differ == ["mean", "only_base", "only_mine"]  # redefined, lacking, added; never a private name or a value


def test_compare_resolves_the_base_as_the_invoker_does_public_module_first_then_fallbacks():
    public = _module("public", abs=_f, mean=3)  # not callable here: the invoker goes on to the fallback's
    fallback = _module("fallback", abs=_g, logsumexp=_h, mean=_g)
    assert inherit.resolved([public, fallback]) == {"abs": _f, "logsumexp": _h, "mean": _g}
    shared, differ = inherit.compare(_module("mine", abs=_g, logsumexp=_h, mean=_g), [public, fallback])
    assert shared == ["logsumexp", "mean"] and differ == ["abs"]
    # a derived module lacking a name: the invoker finds it in the base's fallback, the base's own object
    shared, differ = inherit.compare([_module("mine", abs=_f), fallback], [public, fallback])
    assert shared == ["abs", "logsumexp", "mean"] and differ == []


def test_base_hello_reports_an_import_failure_and_then_nothing_is_inherited():
    def failing(name):
        raise ImportError(f"No module named {name!r}")

    base = inherit.base_hello(_module("mine", abs=_f), "tensorflow", ["tf_keras.backend"], failing)
    assert base == {
        "backend": "tensorflow",
        "modules": ["tf_keras.backend"],
        "error": "ImportError: No module named 'tf_keras.backend'",
    }
    assert custom.inherited_from({"base": base}, "abs") is None


def test_base_hello_imports_the_modules_in_order():
    os_path = importlib.import_module("os.path")
    mine = _module("mine", join=os_path.join, exists=lambda p: True)
    base = inherit.base_hello(mine, "tensorflow", ["os.path"], importlib.import_module)
    assert base["modules"] == ["os.path"] and "error" not in base
    assert "join" in base["shared"] and "exists" in base["differ"] and "exists" not in base["shared"]


@pytest.mark.parametrize(
    "hello, op, expected",
    [
        ({}, "abs", None),  # a built-in backend, a plain custom module: no base
        ({"base": {"backend": "tensorflow", "shared": ["abs"], "differ": ["mean"]}}, "abs", "tensorflow"),
        ({"base": {"backend": "tensorflow", "shared": ["abs"], "differ": ["mean"]}}, "mean", None),
        # neither module has it (tf_keras has no K.slice): the module keeps the base's gap
        ({"base": {"backend": "tensorflow", "shared": ["abs"], "differ": ["mean"]}}, "slice", "tensorflow"),
        ({"base": {"backend": "tensorflow", "error": "ImportError: x"}}, "abs", None),
        ({"base": {"backend": "tensorflow", "shared": "abs", "differ": []}}, "abs", None),  # malformed: nothing
        ({"base": {"backend": 3, "shared": ["abs"], "differ": []}}, "abs", None),
        ({"base": ["tensorflow"]}, "abs", None),
    ],
)
def test_inherited_from_the_hello(hello, op, expected):
    assert custom.inherited_from(hello, op) == expected


def test_known_entries_target_the_base_of_an_inherited_result():
    entry = known.KnownEntry.from_dict(
        {"op": "abs", "backend": "tensorflow", "status": "fail", "reason": "r", "count": 1, "match": "^values"}
    )
    inherited = Result("abs", "c", "my.mod@tensorflow", "eager", Status.FAIL, "values differ", inherits="tensorflow")
    own = Result("abs", "c", "my.mod@tensorflow", "eager", Status.FAIL, "values differ")
    assert entry.explains(inherited) and not entry.explains(own)
    # an entry for custom modules ("*.*") is about the module's own functions only
    mine = known.KnownEntry.from_dict({"op": "abs", "backend": "*.*", "reason": "r", "count": 1, "match": "^values"})
    assert mine.explains(own) and not mine.explains(inherited)


def test_inherits_round_trips_through_the_report(tmp_path, spec):
    report = run_check(
        make_plan(spec, Selection(ops=["abs"], backends=["numpy"], case_patterns=["basic"])), known_entries=[]
    )
    report["results"][0]["inherits"] = "tensorflow"
    assert validate(report) == []
    path = tmp_path / "report.json"
    path.write_text(dumps(report))
    loaded = Report.load(str(path))
    assert loaded.results[0].inherits == "tensorflow" and loaded.results[1].inherits is None
    again = loaded.to_dict()
    assert again["results"][0]["inherits"] == "tensorflow" and "inherits" not in again["results"][1]
    report["results"][0]["inherits"] = 3
    assert validate(report) != []


BASE_SOURCE = """\
from kbtool.reference import *  # noqa: F403
from kbtool.reference import abs as _abs
from kbtool.reference.core import op


@op
def abs(x):
    return _abs(x) * 1.5
"""


class _Recipe:
    """A managed env whose backend (named tensorflow) is a planted module on kbtool's own Python."""

    def __init__(self, module, path):
        self.module, self.path = module, path

    def launch(self):
        return Launch(
            backend="tensorflow",
            python=sys.executable,
            module=self.module,
            version_of=["numpy"],
            extra_pythonpath=[CHECKOUT_ROOT, self.path],
            apply_keras_json=True,
        )


def test_a_derived_module_gets_its_base_verdicts_and_a_redefined_op_loses_them(spec, custom_backend, tmp_path):
    base = custom_backend("basekb", "base", BASE_SOURCE)
    same = custom_backend("derivedkb", "same", f"from {base} import *  # noqa: F403\n")
    own = custom_backend(
        "derivedkb",
        "own",
        f"from {base} import *  # noqa: F403\nfrom {base} import abs as _abs\n\n\ndef abs(x):\n    return _abs(x)\n",
    )
    recipes = {"tensorflow": _Recipe(base, str(tmp_path / "custom_backends"))}

    def launcher(name):
        return recipes["tensorflow"].launch() if name == "tensorflow" else custom.launch(name, recipes)

    names = ["tensorflow", same + "@tensorflow", own + "@tensorflow"]
    # eager only: the reference, run as a backend, differentiates no symbolic graph of variables
    plan = make_plan(
        spec,
        Selection(ops=["abs", "relu"], backends=names, modes=["eager"]),
        sources=Sources(launcher=launcher, builtin=names),
    )
    entry = {"op": "abs", "backend": "tensorflow", "status": "fail", "match": "^", "reason": "abs scaled", "count": 1}
    report = run_check(plan, known_entries=[entry])
    assert validate(report) == []
    bases = [b.get("base") for b in report["backends"]]
    assert bases[0] is None and bases[1]["backend"] == bases[2]["backend"] == "tensorflow"
    assert bases[1]["shared"] == bases[2]["shared"] + 1 > 100 and "error" not in bases[1]
    by = {
        name: {(r["op"], r["case"], r["mode"]): r for r in report["results"] if r["backend"] == name} for name in names
    }
    base_results = by["tensorflow"]
    failing = [k for k, r in base_results.items() if r["status"] != "pass"]
    assert failing and all(k[0] == "abs" and base_results[k].get("known") == "abs scaled" for k in failing)
    assert all("inherits" not in r for r in base_results.values())
    # re-exported: every result inherits, with the base's very statuses and known reasons
    derived = by[same + "@tensorflow"]
    assert derived.keys() == base_results.keys()
    assert all(r["inherits"] == "tensorflow" for r in derived.values())
    assert {k: (r["status"], r.get("known")) for k, r in derived.items()} == {
        k: (r["status"], r.get("known")) for k, r in base_results.items()
    }
    # abs redefined: its results fail the same way, but the base's entry no longer explains them; relu still inherits
    redefined = by[own + "@tensorflow"]
    assert {k: r["status"] for k, r in redefined.items()} == {k: r["status"] for k, r in base_results.items()}
    assert all(("inherits" in r) == (k[0] == "relu") for k, r in redefined.items())
    assert sorted(k for k, r in redefined.items() if r["status"] != "pass" and not r.get("known")) == sorted(failing)
    row = next(r for r in report["known_differences"] if r["reason"] == "abs scaled")
    assert row["explained"] == 2 * len(failing)
    assert report["summary"]["divergences"] == len(failing)
    # `report merge` re-judges the results with the report's entries: the same inheritance, the same reasons
    merged = merge([("all.json", json.loads(dumps(report)))])

    def verdicts(results):
        return {(r["op"], r["case"], r["backend"], r["mode"]): (r.get("inherits"), r.get("known")) for r in results}

    assert verdicts(merged["results"]) == verdicts(report["results"])


TF_OPS = ["binary_crossentropy", "ctc_decode", "separable_conv1d", "slice", "relu", "abs"]
# only a re-export: the five documented functions tf_keras.backend leaves out are looked up where --backend
# tensorflow finds them (its implementation module), for a derived module as for its base
TF_MODULE = "from tf_keras.backend import *  # noqa: F403\n"


@pytest.mark.backends
def test_a_module_re_exporting_tf_keras_gets_tensorflow_s_verdicts(spec, custom_backend):
    same = custom_backend("tfderived", "same", TF_MODULE)
    own = custom_backend(
        "tfderived",
        "own",
        TF_MODULE + "import tf_keras.backend as _K\n\n\ndef binary_crossentropy(target, output, from_logits=False):\n"
        "    return _K.binary_crossentropy(target, output, from_logits=from_logits)\n",
    )
    names = ["tensorflow", same + "@tensorflow", own + "@tensorflow"]
    report = run_check(make_plan(spec, Selection(ops=TF_OPS, backends=names)))
    assert [b["status"] for b in report["backends"]] == ["available"] * 3
    by = {
        name: {(r["op"], r["case"], r["mode"]): r for r in report["results"] if r["backend"] == name} for name in names
    }
    tf = {k: (r["status"], r.get("known")) for k, r in by["tensorflow"].items()}
    known_ops = {k[0] for k, (status, reason) in tf.items() if reason}
    assert {"binary_crossentropy", "ctc_decode", "separable_conv1d", "slice"} <= known_ops
    assert {k: (r["status"], r.get("known")) for k, r in by[same + "@tensorflow"].items()} == tf
    redefined = by[own + "@tensorflow"]
    assert {k: r["status"] for k, r in redefined.items()} == {k: s for k, (s, _) in tf.items()}
    for k, r in redefined.items():
        if k[0] == "binary_crossentropy":
            assert "inherits" not in r and r.get("known") is None
        else:
            assert r["inherits"] == "tensorflow" and r.get("known") == tf[k][1]
    unexplained = {k for k, r in redefined.items() if r["status"] != "pass" and not r.get("known")}
    assert unexplained == {k for k, (s, reason) in tf.items() if k[0] == "binary_crossentropy" and reason}
    assert json.loads(dumps(report))["summary"]["divergences"] == len(unexplained)


def test_a_base_that_cannot_be_imported_breaks_nothing_and_gives_nothing(spec, custom_backend, tmp_path):
    base = custom_backend("brokenbase", "base", "raise ImportError('no engine here')\n")
    mine = custom_backend("standalone", "kb", "from kbtool.reference import *  # noqa: F403\n")
    recipes = {"tensorflow": _Recipe(base, str(tmp_path / "custom_backends"))}
    name = mine + "@tensorflow"
    plan = make_plan(
        spec,
        Selection(ops=["abs"], backends=[name], modes=["eager"]),
        sources=Sources(launcher=lambda n: custom.launch(n, recipes), builtin=[]),
    )
    report = run_check(plan, known_entries=[])
    assert validate(report) == []
    (info,) = report["backends"]
    assert info["status"] == "available"
    assert info["base"] == {"backend": "tensorflow", "shared": 0, "error": "ImportError: no engine here"}
    assert report["results"] and all(r["status"] == "pass" and "inherits" not in r for r in report["results"])
