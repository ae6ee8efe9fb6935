"""The Markdown, HTML and terminal views of a bench, from a synthetic report (no backend): what each must show,
in the units it must show it, escaped where it must be, offline, and the schema the report follows."""

import copy
import io
import re
import shutil
import subprocess

import pytest
from rich.console import Console

from kbtool.bench import html_view, markdown_view, stats, terminal, units
from kbtool.bench import report as bench_report
from kbtool.errors import KbtoolError


def result(op, backend, mode, size, n, median, status="ok", message=None, samples=None, flops=None):
    r = {
        "op": op,
        "size": size,
        "n": n,
        "backend": backend,
        "mode": mode,
        "status": status,
        "message": message,
        "inputs": [{"shape": [int(n), 4], "dtype": "float32"}],
        "kwargs": {},
    }
    if status != "ok":
        return r
    samples = samples or [median * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)]
    r.update(
        outputs=[{"shape": [int(n), 4], "dtype": "float32"}],
        one_time={"build_s": 0.001, "compile_s": None, "first_call_s": 0.002, "total_s": 0.003},
        loops=10,
        warmup_calls=20,
        samples_s=samples,
        flops=flops,
        bytes=32.0 * n,
    )
    r.update(stats.summarize(samples))
    r.update(
        gflops=flops / r["median_s"] / 1e9 if flops else None,
        gbs=r["bytes"] / r["median_s"] / 1e9,
        peak_fraction=0.5,
        peak_kind="matmul" if flops else "copy",
    )
    return r


def synthetic():
    results = []
    for size, n in (("small", 64.0), ("medium", 512.0), ("large", 2048.0)):
        for backend, scale in (("numpy", 1.0), ("tensorflow", 2.0)):
            for mode in ("eager", "symbolic"):
                results.append(result("dot", backend, mode, size, n, scale * 1e-9 * n**3, flops=2.0 * n**3))
                results.append(result("abs", backend, mode, size, n, scale * 1e-8 * n))
    results.append(result("conv2d", "numpy", "eager", "medium", 10.0, 0.00123))
    results.append(
        result(
            "conv2d",
            "tensorflow",
            "eager",
            "medium",
            10.0,
            None,
            status="raised",
            message="ValueError: bad | shape <script>alert(1)</script>",
        )
    )
    noisy = result("conv2d", "numpy", "symbolic", "medium", 10.0, 0.002, samples=[0.001, 0.002, 0.002, 0.004, 0.009])
    results.append(noisy)
    stats.add_ratios(results)
    backends = [
        {
            "name": name,
            "status": "available",
            "python": "3.11.7",
            "versions": {"numpy": "2.4.6"},
            "overhead": {"noop_call_s": 9e-7, "bare_loop_s": 2e-8, "harness_s": 8.8e-7},
        }
        for name in ("numpy", "tensorflow")
    ]
    backends.append({"name": "cntk", "status": "not installed", "reason": "run `kbtool env install cntk`"})
    families = {
        "dot": {"kind": "spec", "variable": "n", "sizes": {"small": 64}, "flops": "2.0 * x[0] * x[1] * y[1]"},
        "abs": {"kind": "scaled", "variable": "elements", "sizes": {}, "case": "basic"},
        "conv2d": {"kind": "scaled", "variable": "elements", "sizes": {}, "case": "valid"},
    }
    machine = {
        "platform": "Linux",
        "cpu": "AMD EPYC",
        "cores": 2,
        "memory_gb": 23.5,
        "python": "3.11.7",
        "numpy": "2.4.6",
    }
    peak = {"matmul_gflops": 100.0, "matmul_n": 2048, "copy_gbs": 10.0, "copy_mb": 64.0}
    settings = {
        "sizes": ["small", "medium", "large"],
        "modes": ["eager", "symbolic"],
        "budget_seconds": 0.1,
        "min_sample_seconds": 0.01,
        "min_samples": 5,
        "max_seconds": 20.0,
        "unstable_cv": 0.1,
        "seed": 0,
    }
    return bench_report.assemble(
        bench_report.BenchRun(
            "kbtool bench --sizes all",
            machine,
            peak,
            settings,
            families,
            backends,
            results,
            stats.scaling(results),
            12.5,
        )
    )


def with_comparison(report):
    report = copy.deepcopy(report)
    rows = [
        {
            "op": "dot",
            "size": "large",
            "backend": "numpy",
            "mode": "eager",
            "verdict": "worse",
            "baseline_median_s": 0.006,
            "median_s": 0.0086,
            "change_pct": 43.3,
            "p_value": 0.0079,
            "fails_gate": True,
        },
        {
            "op": "abs",
            "size": "small",
            "backend": "numpy",
            "mode": "eager",
            "verdict": "unchanged",
            "baseline_median_s": 6.4e-7,
            "median_s": 6.4e-7,
            "change_pct": 0.1,
            "p_value": 0.8,
            "fails_gate": False,
        },
    ]
    report["comparison"] = {
        "baseline": "base.json",
        "alpha": 0.05,
        "min_effect_pct": 5.0,
        "fail_over_pct": 10.0,
        "rows": rows,
        "failed": True,
    }
    report["summary"]["ok"] = False
    return report


def test_the_synthetic_report_follows_the_schema_and_a_broken_one_does_not():
    report = with_comparison(synthetic())
    assert bench_report.validate(report) == []
    broken = copy.deepcopy(report)
    broken["results"][0]["status"] = "fine"
    del broken["peak"]
    problems = bench_report.validate(broken)
    assert any(p.startswith("(top)") and "peak" in p for p in problems)
    assert any(p.startswith("results/0/status") for p in problems)


@pytest.mark.parametrize(
    "seconds, text", [(0.00123, "1.23 ms"), (2.5, "2.5 s"), (8.8e-7, "880 ns"), (4.56e-5, "45.6 µs"), (None, "")]
)
def test_times_are_written_in_adaptive_units_with_three_digits(seconds, text):
    assert units.fmt_seconds(seconds) == text


def test_markdown_shows_the_verdict_facts_figures_flags_growth_errors_and_the_gate():
    text = markdown_view.render(with_comparison(synthetic()))
    first = text.splitlines()[2]
    assert first.startswith("**bench: 26 measured, 1 not measured") and "gate FAILED" in first
    assert "100.0 GFLOP/s (float32 matmul 2048×2048, NumPy's BLAS)" in text and "880 ns" in text  # peak, harness
    assert "| conv2d | numpy | eager | 3 ms | 1.23 ms ± " in text
    assert re.search(r"\| conv2d \| numpy \| symbolic \| .* \| unstable \(CV \d+%, 5 samples\) \|", text)
    assert "ValueError: bad \\| shape" in text  # a | in a cell is escaped
    growth = re.search(r"\| dot \| numpy \| eager \| (\d\.\d\d) \| 64 → 2048 \|", text)
    assert growth and float(growth.group(1)) == pytest.approx(3.0, abs=0.05)
    assert "| dot | large | numpy | eager | 6 ms | 8.6 ms | +43.3 % | 0.0079 | worse (fails the gate) |" in text
    assert "| abs | small | numpy | eager |" not in text.split("## Against")[1]  # unchanged rows left out
    assert "| cntk | not installed: run \\`kbtool env install cntk\\` |" in text  # as check escapes it


def test_html_is_offline_escaped_and_has_a_growth_plot_per_op_with_several_sizes():
    page = html_view.render(with_comparison(synthetic()))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and not re.search("https?:", page)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("time per call against n") == 2  # dot and abs have three sizes; conv2d one
    assert page.count("one-time (light)") == 3
    assert "gate FAILED" in page and "worse (fails the gate)" in page
    assert "1.23 ms ± " in page and "unstable (CV" in page


def test_the_growth_plot_draws_a_line_per_backend_and_mode():
    rows = [r for r in synthetic()["results"] if r["op"] == "dot"]
    svg = html_view.growth_svg("dot", rows, {"numpy": "#111", "tensorflow": "#222"})
    assert svg.count("<polyline") == 4 and len(re.findall(r'<polyline[^>]*stroke-dasharray="5,3"', svg)) == 2
    # the legend names each line in full (backend and mode), its sample dashed as the line is
    assert ">tensorflow symbolic</text>" in svg and ">numpy eager</text>" in svg
    assert len(re.findall(r'<line [^>]*stroke-dasharray="5,3"', svg)) == 2
    assert html_view.growth_svg("conv2d", [r for r in synthetic()["results"] if r["op"] == "conv2d"], {}) == ""


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="no chromium")
def test_the_html_page_opens_in_headless_chromium(tmp_path):
    path = tmp_path / "bench.html"
    path.write_text(html_view.render(synthetic()))
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    ran = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom"]
        + ["file://" + str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = ran.stdout
    assert 'id="verdict"' in dom and "bench: 26 measured" in dom and dom.count("<svg") == 5
    assert "Content Security Policy" not in ran.stderr  # the page's policy blocks nothing of its own


def test_terminal_shows_every_backend_the_table_the_slowest_and_the_verdict():
    out = io.StringIO()
    terminal.render(with_comparison(synthetic()), console=Console(file=out, width=200))
    text = out.getvalue()
    assert "numpy: harness 880 ns per call over a bare loop" in text
    assert "cntk: not installed (run `kbtool env install cntk`)" in text
    assert "1.23 ms ± " in text and "gate FAILED" in text.splitlines()[-1]
    assert "slowest relative to the fastest backend: " in text


def test_the_bench_document_is_built_from_one_record_and_written_by_extension(tmp_path):
    """report.py owns the bench's JSON (assemble from a BenchRun, dumps, load); output.py writes each format by the
    file's extension with the view that renders it."""
    from kbtool.bench import output

    data = synthetic()
    assert data["format"] == "kbtool-bench" and data["summary"]["measured"] == 26
    assert data["summary"]["ok"] == bench_report.is_ok(data)
    assert output.format_of("a.json") == "json" and output.format_of("b.md") == "markdown"
    assert output.format_of("c.html") == "html"
    with pytest.raises(KbtoolError):
        output.format_of("d.txt")
    assert output.render(data, "json") == bench_report.dumps(data)
    assert output.render(data, "markdown") == markdown_view.render(data)
    paths = [str(tmp_path / "b.json"), str(tmp_path / "b.md")]
    assert output.write_all(data, paths) == []
    assert bench_report.load(paths[0]) == data
    assert (tmp_path / "b.md").read_text(encoding="utf-8") == markdown_view.render(data)
    failed = bench_report.assemble(bench_report.BenchRun(**dict(_run_of(data), incomplete={"note": "SIGINT"})))
    assert not failed["summary"]["ok"] and failed["incomplete"] == {"note": "SIGINT"}


def _run_of(data):
    keys = ("command", "machine", "peak", "settings", "families", "backends", "results", "scaling", "wall_seconds")
    return {key: data[key] for key in keys}
