"""A bench says what its numbers are worth: the machine's load recorded and a warning when it was busy, one sample
said as such, unstable results in the banner's colour, "% peak" above 100 explained, ratios without exponents, and
every terminal line within 80 columns (on a real bench's results, and on `kbtool bench --op dot` itself)."""

import copy
import io
import json
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from kbtool.bench import html_view, load, markdown_view, terminal, units
from kbtool.bench import report as bench_report

from .test_bench_views import result, synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(ROOT, "reports", "bench.json")

IDLE = {
    "cores": 4,
    "loadavg_before": [0.4, 0.3, 0.2],
    "loadavg_after": [1.2, 0.5, 0.3],
    "others_cpu": 0.05,
    "clock_before": {"min_mhz": 2400.0, "mean_mhz": 2500.0, "max_mhz": 2600.0, "source": "cpufreq"},
    "clock_after": None,
    "governor": "performance",
    "busy_per_core": 0.5,
}


def with_load(report, **figures):
    report = copy.deepcopy(report)
    report["machine"]["load"] = load.judge(dict(IDLE, **figures))
    return report


def stable(report):
    """The report with no unstable result (the banner's colour then depends on the load alone)."""
    report = copy.deepcopy(report)
    for r in report["results"]:
        r["unstable"] = False
    report["summary"]["unstable"] = 0
    return report


# ------------------------------------------------------------------------------------------------ the load record
def test_an_idle_machine_is_not_busy_and_a_loaded_one_is_with_its_figures():
    assert load.judge(dict(IDLE))["busy"] is False and load.judge(dict(IDLE))["reasons"] == []
    before = load.judge(dict(IDLE, loadavg_before=[3.84, 2.0, 1.0]))  # 0.96 per core
    assert before["busy"] and before["reasons"] == ["load average 3.84 on 4 cores before the bench (0.96 per core)"]
    during = load.judge(dict(IDLE, others_cpu=0.77))
    assert during["busy"] and during["reasons"] == ["other processes used 77% of the CPU time during the bench"]
    # without /proc/stat: the load after the bench, less the bench's own worker
    assert load.judge(dict(IDLE, others_cpu=None, loadavg_after=[2.9, 1, 1]))["busy"] is False  # 0.48 per core
    fallback = load.judge(dict(IDLE, others_cpu=None, loadavg_after=[3.5, 1, 1]))
    assert fallback["busy"] and "3.50 on 4 cores after the bench (0.62 per core" in fallback["reasons"][0]


def test_this_machines_record_follows_the_schema_and_an_old_report_without_one_still_loads(tmp_path):
    watch = load.Watch()
    record = watch.record()
    assert record["cores"] == os.cpu_count() and isinstance(record["busy"], bool)
    if hasattr(os, "getloadavg"):
        assert len(record["loadavg_before"]) == 3 and len(record["loadavg_after"]) == 3
    report = synthetic()
    report["machine"]["load"] = record
    assert bench_report.validate(report) == []
    broken = copy.deepcopy(report)
    broken["machine"]["load"]["busy"] = "yes"
    assert any(p.startswith("machine/load/busy") for p in bench_report.validate(broken))
    old = synthetic()  # a report from before the record: no machine.load
    assert "load" not in old["machine"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = bench_report.load(str(path))
    assert load.warning(loaded) is None and "machine busy" not in units.verdict_line(loaded)
    assert "Load:" not in markdown_view.render(loaded)


def test_a_busy_machine_is_said_in_every_view_with_its_figures():
    report = with_load(synthetic(), loadavg_before=[3.84, 2.0, 1.0], others_cpu=0.77)
    warning = load.warning(report)
    assert warning.startswith("machine busy: load average 3.84 on 4 cores before the bench (0.96 per core)")
    assert "other processes used 77% of the CPU time" in warning
    assert "machine busy" in units.verdict_line(report)  # -q shows the verdict line alone
    out = io.StringIO()
    terminal.render(report, console=Console(file=out, width=200))
    text = out.getvalue()
    assert "machine busy: load average 3.84" in text
    assert "load: load average (1 min) 3.84 before, 1.20 after on 4 cores" in text and "governor performance" in text
    md = markdown_view.render(report)
    assert "> **Warning:** machine busy: load average 3.84" in md and "- Load: load average (1 min) 3.84" in md
    page = html_view.render(stable(report))
    assert '<p class="verdict warn" id="verdict">' in page
    assert '<p class="banner warn">machine busy: load average 3.84' in page


# ------------------------------------------------------------------------------------------------ the banner
def test_the_html_banner_is_green_only_without_unstable_results_or_load():
    report = synthetic()
    assert report["summary"]["ok"] and report["summary"]["unstable"] == 1
    page = html_view.render(report)
    assert '<p class="verdict warn" id="verdict">' in page  # ok, but one result is unstable: amber, not green
    banner = re.search(r'<p class="banner warn">([^<]*)</p>', page).group(1)
    assert banner.startswith("1 of 26 results unstable: the samples&#39; CV (standard deviation / mean) above 10%")
    assert '<p class="verdict ok" id="verdict">' in html_view.render(stable(report))
    assert 'class="banner' not in html_view.render(stable(report))
    failed = copy.deepcopy(report)
    failed["summary"]["ok"] = False
    assert '<p class="verdict notok" id="verdict">' in html_view.render(failed)
    assert "> **Warning:** 1 of 26 results unstable" in markdown_view.render(report)


# ------------------------------------------------------------------------------------------------ numbers
@pytest.mark.parametrize(
    "ratio, text",
    [
        (1.0, "×1.00"),
        (1.234, "×1.23"),
        (45.61, "×45.6"),
        (789.4, "×789"),
        (2520.0, "×2,520"),
        (999.6, "×1,000"),
        (2521375.62, "×2,520,000"),
        (0.307, "×0.307"),
        (0.0004, "×1/2,500"),
        (None, ""),
    ],
)
def test_ratios_are_written_without_an_exponent(ratio, text):
    assert units.fmt_ratio(ratio) == text


@pytest.mark.parametrize("rate, text", [(7.77e-05, "< 0.001"), (0.0605, "0.0605"), (5.17, "5.17"), (1234.5, "1,230")])
def test_rates_are_written_without_an_exponent(rate, text):
    assert units.fmt_rate(rate) == text


def test_one_sample_is_said_as_such_not_as_a_spread_of_zero():
    one = result("map_fn", "tensorflow", "eager", "large", 4096.0, 58.9, samples=[58.9])
    assert one["n_samples"] == 1 and one["unstable"]
    cells = units.measured_cells(one)
    assert cells[1] == "58.9 s (1 sample)" and "±" not in cells[1]
    assert units.flags(one) == ["unstable (only 1 sample)"]
    two = result("map_fn", "tensorflow", "eager", "large", 4096.0, 1.0, samples=[1.0, 1.5])
    assert units.measured_cells(two)[1] == "1.25 s ± 250 ms" and units.flags(two) == ["unstable (only 2 samples)"]


def test_a_result_above_the_peak_is_capped_and_explained():
    report = synthetic()
    above = next(r for r in report["results"] if r["op"] == "abs")
    above["peak_fraction"], above["peak_kind"] = 23.4, "copy"
    assert units.fmt_peak(23.4) == "> 100 %" and units.fmt_peak(0.5) == "50.0 %" and units.fmt_peak(1.0) == "100.0 %"
    assert units.measured_cells(above)[5] == "> 100 %"
    assert "above the copy peak (moved less than counted, or in cache)" in units.flags(above)
    md = markdown_view.render(report)
    assert "2340" not in md and "&gt; 100 %" in md  # the cell (escaped as every cell is), never 2340.0 %
    assert "the peak is a 64 MB copy through memory" in md  # the why, beside the peak
    out = io.StringIO()
    terminal.render(report, console=Console(file=out, width=80))
    assert "! above the copy peak: the op moves less than its inputs and outputs" in out.getvalue()


# ------------------------------------------------------------------------------------------------ 80 columns
def _table_lines(text):
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    notes = ("all rows:", "* ", "! ", "size s,", "left out", "bench:")  # the lines a table's rows end at
    end = next(i for i in range(rule + 1, len(lines)) if not lines[i].strip() or lines[i].startswith(notes))
    return lines[rule - 1], lines[rule + 1 : end]


@pytest.mark.skipif(not os.path.exists(PUBLISHED), reason="the published bench is part of the repository")
def test_a_real_bench_fits_80_columns_one_line_a_result_with_whole_headers():
    with open(PUBLISHED) as fh:
        report = json.load(fh)
    report["results"] = [r for r in report["results"] if r["op"] in ("dot", "stop_gradient")]
    assert len(report["results"]) > 40 and any(r.get("n_samples") == 1 for r in json.load(open(PUBLISHED))["results"])
    out = io.StringIO()
    terminal.render(report, console=Console(file=out, width=80))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    header, rows = _table_lines(text)
    assert header.split()[:4] == ["op", "size", "backend", "mode"] and "× fastest" in header
    assert len(rows) == len(report["results"])  # one line per result
    assert re.search(r"^dot +large +numpy +eager +87\.7 ms ± 7\.23 ms \*! +×1\.00 *$", "\n".join(rows), re.M)
    assert "left out at this width: flags, min, one-time, GB/s, GFLOP/s, % peak" in text
    assert "* unstable (the flags column, which says why, did not fit)" in text and "! above the matmul peak" in text
    # the longest op name: sizes and modes abbreviated, then the median alone, still a line a result (a single
    # sample's "(1 sample)" beside it is the one thing that may make a name this long fold)
    report["results"] = [
        r
        for r in json.load(open(PUBLISHED))["results"]
        if r["op"] in ("dot", "ctc_label_dense_to_sparse") and r["status"] == "ok" and r["n_samples"] > 1
    ]
    out = io.StringIO()
    terminal.render(report, console=Console(file=out, width=80))
    text = out.getvalue()
    header, rows = _table_lines(text)
    assert max(len(line) for line in text.splitlines()) <= 80 and len(rows) == len(report["results"])
    assert header.split() == ["op", "size", "backend", "mode", "median", "×", "fastest"]
    joined = "\n".join(rows)
    assert re.search(r"^ctc_label_dense_to_sparse +m +tensorflow +eager +419 ms +×21,600 *$", joined, re.M)
    assert "size s, m, l: small, medium, large; mode sym: symbolic" in text and "% peak, IQR" in text
    # wide: every column, the flags in words
    out = io.StringIO()
    terminal.render(report, console=Console(file=out, width=400))
    header, rows = _table_lines(out.getvalue())
    assert "GFLOP/s" in header and "one-time" in header and "flags" in header and len(rows) == len(report["results"])


def test_a_table_that_cannot_fit_leaves_out_columns_in_order_and_says_which():
    results = synthetic()["results"]
    for width, left in ((400, []), (120, ["flags"]), (80, ["flags", "min", "one-time", "GB/s", "GFLOP/s"])):
        table, fit = terminal.fitted_table(results, width)
        out = io.StringIO()
        Console(file=out, width=width).print(table)
        lines = out.getvalue().splitlines()
        assert [n for n in fit.left_out if n not in ("op", "size", "mode")] == left, width
        assert max(len(line) for line in lines) <= width and len(lines) == len(results) + 2 and "…" not in lines[0]


def _bench_at_80(args, env_extra=None, timeout=300):
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=ROOT, **(env_extra or {}))
    ran = subprocess.run(
        [sys.executable, "-m", "kbtool", "bench", "--op", "dot", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )
    lines = (ran.stdout + ran.stderr).splitlines()
    return ran, lines


def test_bench_dot_on_numpy_fits_80_columns(tmp_path):
    ran, lines = _bench_at_80(
        ["--backend", "numpy", "--budget", "0.02", "--size", "small"], {"KBTOOL_HOME": str(tmp_path)}
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "median ± IQR" in ran.stdout and ran.stdout.splitlines()[-1].startswith("bench: 2 measured")


@pytest.mark.backends
def test_bench_dot_on_every_installed_backend_fits_80_columns():
    ran, lines = _bench_at_80(["--budget", "0.02", "--size", "small"], timeout=900)
    assert ran.returncode in (0, 1), ran.stderr
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    header, rows = _table_lines(ran.stdout)
    assert "backend" in header and "× fastest" in header and "…" not in header
    assert len({row.split()[0] for row in rows}) >= 2  # several backends, one line each


def test_the_html_plots_are_large_with_every_line_named_and_never_collapsed():
    report = synthetic()
    page = html_view.render(report)
    assert "<details" not in page and page.count('<section class="op"') == 3
    widths = [int(w) for w in re.findall(r'<svg width="(\d+)"', page)]
    assert len(widths) == 5 and min(widths) >= 600  # two growth plots and three one-time plots
    growth = html_view.growth_svg("dot", [r for r in report["results"] if r["op"] == "dot"], {})
    for name in ("numpy eager", "numpy symbolic", "tensorflow eager", "tensorflow symbolic"):
        assert f">{name}</text>" in growth
