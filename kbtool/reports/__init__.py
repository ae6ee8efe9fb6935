"""Renderers: each turns the JSON report (the source of truth) into one format."""
FORMATS = ("json", "terminal", "markdown", "html", "junit")


def render(report, fmt):
    import importlib

    if fmt not in FORMATS:
        raise ValueError(fmt)
    return importlib.import_module("kbtool.reports." + ("json_report" if fmt == "json" else fmt)).render(report)
