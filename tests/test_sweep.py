"""`kbtool check --backend B --versions PKG=LO..HI`: the release sweep (kbtool/runners/releases.py), and the version column of
each view (summary.release_versions). The package index is a fake (releases.index_versions' `runner`, or
monkeypatched) and installs are fakes, except in the one `backends` test."""

import io
import json
import shlex
import subprocess
import types
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from rich.console import Console

from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.plan import Selection, Sources, make_plan
from kbtool.reports import html, junit, markdown, terminal
from kbtool.reports.summary import backend_rows, release_versions
from kbtool.repro import command
from kbtool.results import BackendStatus, Result, Status
from kbtool.runners import envs, releases
from kbtool.settings import RunSettings

from .helpers import make_report, record

INDEX = "keras (2.10.0)\nAvailable versions: 2.10.0, 2.9.0, 2.3.1, 2.3.0, 2.2.5, 2.2.4, 2.11.0rc1, 2.0.0\n"


def fake_pip(stdout=INDEX, returncode=0):
    def run(argv, **kwargs):
        assert argv[-3:] == ["versions", "keras"] or argv[-1] == "keras"
        return subprocess.CompletedProcess(argv, returncode, stdout.encode(), b"")

    return run


@pytest.fixture
def index(monkeypatch):
    """The package index as the fake pip answers it, whatever is installed here."""
    monkeypatch.setattr(envs, "find_interpreter", lambda *a, **k: types.SimpleNamespace(path="/no/such/python"))
    real = releases.index_versions
    monkeypatch.setattr(releases, "index_versions", lambda base, package, runner=None: real(base, package, fake_pip()))


# ------------------------------------------------------------------------------------------------ expansion


def test_expand_orders_by_version_not_as_strings(index):
    found = [r.name for r in releases.expand("tensorflow1", "keras=2.3.1..2.10.0")]
    assert found == [
        "tensorflow1[keras=2.3.1]",
        "tensorflow1[keras=2.9.0]",
        "tensorflow1[keras=2.10.0]",  # after 2.9.0: as strings it would sort first; no 2.11.0rc1
    ]


def test_index_versions_drops_prereleases_and_sorts():
    got = releases.index_versions("tensorflow1", "keras", runner=fake_pip())
    assert got == ["2.0.0", "2.2.4", "2.2.5", "2.3.0", "2.3.1", "2.9.0", "2.10.0"]


def test_expand_backends_replaces_each_base_in_place(index):
    names = releases.expand_backends(["numpy", "tensorflow1", "theano"], "keras=2.2.4..2.2.5")
    assert names == [
        "numpy",  # no keras in its env: kept as named
        "tensorflow1[keras=2.2.4]",
        "tensorflow1[keras=2.2.5]",
        "theano[keras=2.2.4]",
        "theano[keras=2.2.5]",
    ]


def test_expand_backends_needs_a_base_with_the_package(index):
    with pytest.raises(KbtoolError, match=r"no backend named has keras in its env \(numpy\)"):
        releases.expand_backends(["numpy"], "keras=2.2.4..2.2.5")


def test_expand_says_a_release_the_index_lacks(index):
    with pytest.raises(KbtoolError, match="the index has no keras 2.2.6"):
        releases.expand_backends(["tensorflow1"], "keras=2.2.4..2.2.6")


# ------------------------------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize(
    "args, words",
    [
        (["--versions", "keras=2.2.4..2.3.1"], "--versions sweeps the releases of a backend you name: give --backend"),
        (["--backend", "tensorflow1", "--versions", "keras=2.2.4"], "write PACKAGE=LOW..HIGH"),
        (["--backend", "tensorflow1", "--versions", "keras=2.3.1..2.2.4"], "2.3.1 is newer than 2.2.4"),
        (["--backend", "numpy", "--versions", "keras=2.2.4..2.3.1"], "no backend named has keras in its env"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, words, tmp_path, monkeypatch, keras_home):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(main, ["check", "--op", "abs"] + args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kbtool: error: ") and words in lines[0], result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------------------------ installs


def test_install_missing_says_progress_and_keeps_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    said, tried = [], []

    def install(recipe):
        tried.append(recipe.name)
        return "pip: no matching distribution" if recipe.name.endswith("2.2.5]") else None

    names = ["numpy", "tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.2.5]"]
    failed = releases.install_missing(names, said.append, install=install)
    assert tried == names[1:]  # numpy is no release: nothing to install
    assert failed == {"tensorflow1[keras=2.2.5]": "could not be installed: pip: no matching distribution"}
    assert said[0] == "kbtool: installing 1 of 2 releases: tensorflow1[keras=2.2.4]"
    assert said[1].startswith("kbtool: installed tensorflow1[keras=2.2.4] in ") and said[1].endswith(" s")
    assert said[2] == "kbtool: installing 2 of 2 releases: tensorflow1[keras=2.2.5]"
    assert "could not be installed" in said[3]


def test_a_release_that_did_not_install_is_broken_not_a_crash(spec):
    plan = make_plan(
        spec,
        Selection(ops=["abs"], backends=["numpy", "tensorflow1[keras=2.2.5]"]),
        sources=Sources(not_run={"tensorflow1[keras=2.2.5]": "could not be installed: no wheel"}),
    )
    planned_backend = plan.planned_backend("tensorflow1[keras=2.2.5]")
    assert (
        planned_backend.launch is None
        and planned_backend.status == BackendStatus.BROKEN.value
        and "no wheel" in planned_backend.unavailable
    )
    with pytest.raises(KbtoolError, match="nothing to check: no backend can run here.*no wheel"):
        make_plan(
            spec,
            Selection(ops=["abs"], backends=["tensorflow1[keras=2.2.5]"]),
            sources=Sources(not_run={"tensorflow1[keras=2.2.5]": "could not be installed: no wheel"}),
        )


def test_check_sweep_with_failed_installs_reports_them_and_is_not_green(index, tmp_path, monkeypatch, no_known):
    def install_all(recipes, force, out, err, **kwargs):
        err("kbtool: error: no wheel for this Python")
        return [r.name for r in recipes]

    monkeypatch.setattr(envs, "install_all", install_all)
    monkeypatch.setattr(releases, "refuse_missing_base", lambda names: None)  # the base env stands installed
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        main,
        ["check", "--op", "abs", "--known", no_known, "--backend", "numpy", "--backend", "tensorflow1"]
        + ["--versions", "keras=2.2.4..2.2.5", "-o", str(out)],
    )
    assert result.exit_code == 1, result.output
    assert "installing 2 of 2 releases: tensorflow1[keras=2.2.5]" in result.output
    report = json.loads(out.read_text())
    assert [b["name"] for b in report["backends"]] == ["numpy", "tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.2.5]"]
    for info in report["backends"][1:]:
        assert info["status"] == "broken" and "no wheel for this Python" in info["reason"]
    assert report["summary"]["ok"] is False


# ------------------------------------------------------------------------------------------------ views


def sweep_report():
    def info(name, keras, tf="1.15.5"):
        return {
            "name": name,
            "kind": "builtin",
            "python": "3.7.16",
            "status": "available",
            "versions": {"tensorflow": tf, "keras": keras, "numpy": "1.18.5"},
            "module": "keras.backend",
            "restarts": 0,
        }

    names = ["tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.10.0]", "tensorflow1"]
    backends = [info(names[0], "2.2.4"), info(names[1], "2.10.0"), info(names[2], "2.3.1")]
    results = [record("batch_dot", "rank4_rank3", names[0], "error")] + [
        record("batch_dot", "rank4_rank3", n, "pass") for n in names[1:]
    ]
    return make_report(backends, results)


def test_release_versions_name_what_tells_them_apart():
    assert release_versions(sweep_report()) == {
        "tensorflow1[keras=2.2.4]": "keras 2.2.4",
        "tensorflow1[keras=2.10.0]": "keras 2.10.0",
        "tensorflow1": "keras 2.3.1",  # the base beside its releases: its own keras
    }


def test_release_versions_include_coupled_packages():
    report = make_report(
        [
            {
                "name": "tensorflow[tf-keras=2.16.0]",
                "kind": "builtin",
                "status": "available",
                "versions": {"tensorflow": "2.16.2", "tf_keras": "2.16.0", "numpy": "1.26.4"},
            }
        ],
        [record("abs", "a", "tensorflow[tf-keras=2.16.0]", "pass")],
    )
    assert release_versions(report) == {"tensorflow[tf-keras=2.16.0]": "tf-keras 2.16.0, tensorflow 2.16.2"}


def test_no_release_no_change():
    report = make_report([dict(sweep_report()["backends"][2])], [record("abs", "a", "tensorflow1", "pass")])
    assert release_versions(report) == {}
    assert backend_rows(report)[1][0][1] == "1.15.5"  # the engine's version, as before


def printed(report, width):
    console = Console(file=io.StringIO(), width=width, record=True)
    terminal.render(report, console, verbosity=1)
    return console.export_text().splitlines()


def test_terminal_matrix_heads_releases_base_over_pins_at_80_columns():
    lines = printed(sweep_report(), 80)
    assert all(len(line) <= 80 for line in lines)
    head = next(i for i, line in enumerate(lines) if "[keras=2.2.4]" in line)
    assert lines[head - 1].count("tensorflow1") == 3  # the base, over each column
    assert "[keras=2.10.0]" in lines[head] and "keras 2.3.1" in lines[head]  # the base: its own keras
    assert lines[head].index("[keras=2.2.4]") < lines[head].index("[keras=2.10.0]")
    assert not any("tensorflow1[keras=2.2.4]" in line for line in lines[: head + 1])  # no 24-column heading


def test_terminal_backend_table_has_the_version_column_where_it_fits():
    lines = printed(sweep_report(), 120)
    header = next(line for line in lines if line.startswith("backend "))
    assert "version" in header
    row = next(line for line in lines if line.startswith("tensorflow1[keras=2.10.0] "))
    assert "keras 2.10.0" in row


def test_markdown_html_junit_show_the_release_versions():
    report = sweep_report()
    md = markdown.render(report)
    assert any(line.startswith("| tensorflow1[keras=2.10.0] | keras 2.10.0 |") for line in md.splitlines()), md
    page = html.render(report)
    assert '<p class="release" title="the versions that tell this release apart">keras 2.10.0</p>' in page
    suites = {s.get("name"): s for s in ET.fromstring(junit.render(report)).iter("testsuite")}
    props = {p.get("name"): p.get("value") for p in suites["kbtool.tensorflow1[keras=2.2.4]"].iter("property")}
    assert props["release.base"] == "tensorflow1" and props["release.versions"] == "keras 2.2.4"
    base = {p.get("name") for p in suites["kbtool.tensorflow1"].iter("property")}
    assert "release.base" not in base


# ------------------------------------------------------------------------------------------------ repro


def test_repro_of_a_release_result_is_shell_quoted():
    result = Result(
        op="batch_dot", case="rank4_rank3", backend="tensorflow1[keras=2.2.4]", mode="eager", status=Status.ERROR
    )
    line = command(result, settings=RunSettings(kbtool_home="/tmp/a home"))
    assert "--backend 'tensorflow1[keras=2.2.4]'" in line
    words = shlex.split(line)
    assert words[words.index("--backend") + 1] == "tensorflow1[keras=2.2.4]"
    assert words[0] == "KBTOOL_HOME=/tmp/a home"  # a release's env lives under kbtool's home


# ------------------------------------------------------------------------------------------------ for real


@pytest.mark.backends
def test_sweep_runs_each_release_for_real(tmp_path, keras_home):
    """tensorflow1's env and keras 2.2.4 / 2.2.5 (installed on the fly, seconds each): 2.2.4 raises on the 4-D x
    3-D batch_dot, 2.2.5 does not (keras PR #11458)."""
    out = tmp_path / "sweep.json"
    result = CliRunner().invoke(
        main,
        ["check", "--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.2.5", "-o", str(out)],
    )
    assert result.exit_code in (0, 1), result.output
    report = json.loads(out.read_text())
    infos = {b["name"]: b for b in report["backends"]}
    assert list(infos) == ["tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.2.5]"]
    assert infos["tensorflow1[keras=2.2.4]"]["versions"]["keras"] == "2.2.4"
    assert infos["tensorflow1[keras=2.2.5]"]["versions"]["keras"] == "2.2.5"
    status = {
        r["backend"]: r["status"] for r in report["results"] if r["case"] == "rank4_rank3" and r["mode"] == "eager"
    }
    assert status == {"tensorflow1[keras=2.2.4]": "error", "tensorflow1[keras=2.2.5]": "pass"}
