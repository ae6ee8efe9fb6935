"""The published bench in reports/ (`make bench-report`): a valid bench of every op on every backend at every
size, whose Markdown and HTML are exactly what kbtool renders from its JSON."""

import json
import os

import pytest

from kbtool.bench import families, html_view, markdown_view
from kbtool.bench import report as bench_report
from kbtool.runners.recipes import keras3 as keras3_engines
from kbtool.runners.registry import BUILTIN, ORACLES, RECIPES
from kbtool.specs import loader

REPORTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reports")


@pytest.fixture(scope="module")
def published():
    with open(os.path.join(REPORTS, "bench.json")) as fh:
        return json.load(fh)


def test_it_is_a_complete_valid_bench_of_every_op_on_every_backend_at_every_size(published):
    assert bench_report.validate(published) == [] and "incomplete" not in published
    assert "--backend" not in published["command"]  # its plan: every benchable built-in of the kbtool that made it
    names = [b["name"] for b in published["backends"]]
    # The five keras3-* engines came after the published bench (`make bench-report` with their envs installed adds
    # them): a bench has all of them or, made before them, none. Every other benchable built-in is in it.
    engines = [name for name, recipe in RECIPES.items() if recipe.module == keras3_engines.ADAPTER]
    assert len(engines) == 5
    made_before_the_engines = not set(engines) & set(names)
    assert names == [b for b in BUILTIN if b not in ORACLES and not (made_before_the_engines and b in engines)]
    assert {b["status"] for b in published["backends"]} == {"available"}
    assert published["settings"]["sizes"] == ["small", "medium", "large"]
    assert sorted(published["families"]) == families.benchable_ops(loader.load())
    measured = {(r["op"], r["backend"]) for r in published["results"] if r["status"] == "ok"}
    assert {op for op, backend in measured if backend == "numpy"} == set(published["families"])
    assert published["summary"]["ok"] is True


def test_its_views_are_rendered_from_its_json(published):
    for name, view in (("bench.md", markdown_view), ("bench.html", html_view)):
        with open(os.path.join(REPORTS, name), encoding="utf-8") as fh:
            assert fh.read() == view.render(published), name


def test_a_large_dot_reaches_80_percent_of_the_measured_peak_where_the_backend_can(published):
    dot = {
        (r["backend"], r["mode"]): r
        for r in published["results"]
        if r["op"] == "dot" and r["size"] == "large" and r["status"] == "ok"
    }
    assert dot[("numpy", "eager")]["peak_fraction"] >= 0.8
    assert dot[("tensorflow", "eager")]["peak_fraction"] >= 0.8
