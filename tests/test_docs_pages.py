"""The docs read true on every install (#33, part F): `kbtool --help` points to docs that exist, each command page
carries its command's real --help (committed by scripts/sync-command-help.py, so GitHub shows it) and never drifts
from the CLI, and the pages' counts and terms agree with what kbtool says."""

import importlib.util
import os
import re
import subprocess
import sys
import types

import pytest
import yaml

from kbtool import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name, *parts):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *parts))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNC = load("sync_command_help", "scripts", "sync-command-help.py")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def kbtool(*args, cwd=ROOT, pythonpath=ROOT):
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-m", "kbtool", *args], capture_output=True, text=True, env=env, cwd=cwd)


# --- kbtool --help points to docs that exist ---------------------------------------------------------------------


def test_the_docs_url_is_the_projects_documentation_url_on_its_repository():
    documentation = re.search(r'^Documentation = "([^"]+)"$', read("pyproject.toml"), re.MULTILINE)
    assert documentation and cli.DOCS_URL == documentation.group(1)
    repo = yaml.safe_load(read("mkdocs.yml"))["repo_url"]
    assert cli.DOCS_URL.startswith(repo.rstrip("/") + "/tree/main/docs")


def test_help_names_the_local_index_only_where_it_exists(tmp_path):
    checkout = cli.docs_pointer(os.path.join(ROOT, "kbtool"))
    assert cli.DOCS_URL in checkout and os.path.join(ROOT, "docs", "index.md") in checkout
    (tmp_path / "kbtool").mkdir()
    installed = cli.docs_pointer(str(tmp_path / "kbtool"))  # site-packages: no docs/ beside the package
    assert installed == f"Docs: {cli.DOCS_URL}"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# another project's docs\n")
    assert cli.docs_pointer(str(tmp_path / "kbtool")) == installed  # a stray docs/ is not kbtool's checkout


def test_kbtool_help_of_an_installed_package_names_no_file_it_lacks(tmp_path):
    """kbtool as pip lays it out (the package alone on the path, no docs/ beside it): the help gives the URL."""
    (tmp_path / "kbtool").symlink_to(os.path.join(ROOT, "kbtool"), target_is_directory=True)
    result = kbtool("--help", cwd=str(tmp_path), pythonpath=str(tmp_path))
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert f"Docs: {cli.DOCS_URL}" in text and "index.md" not in text and "make docs" not in text


def test_kbtool_help_in_a_checkout_names_its_index_which_exists():
    text = " ".join(kbtool("--help").stdout.split())
    local = re.search(r"in this checkout: (\S+index\.md)", text)
    assert cli.DOCS_URL in text and local and os.path.isfile(local.group(1))


# --- every command page carries its command's real --help --------------------------------------------------------


def test_every_committed_help_block_is_what_the_command_prints():
    helps = {}
    stale, blocks = [], 0
    for path in SYNC.pages():
        text = read(path)
        blocks += text.count(SYNC.END)
        assert text.count(SYNC.END) == len(SYNC.START.findall(text)), f"{path}: a marker without its help block"
        if SYNC.synced(text, helps) != text:
            stale.append(os.path.relpath(path, ROOT))
    assert stale == [], f"help blocks out of date: run `{SYNC.FIX}`"
    assert blocks == len(helps) >= 30  # each command once, every one of them (tests/test_docs.py: all leaves)


@pytest.mark.parametrize("words", [("config", "set"), ("report", "devices"), ("check",)])
def test_the_rendered_help_is_the_real_commands_at_80_columns(words):
    """The script renders in-process; the real `kbtool ... --help` in an 80-column terminal prints the same."""
    result = kbtool(*words, "--help")
    assert result.returncode == 0 and result.stdout.rstrip("\n") == SYNC.help_text(words)
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_sync_fills_a_new_marker_rewrites_a_stale_block_and_leaves_a_fresh_page_alone():
    helps = {}
    page = "# x\n\n<!-- kbtool-help: config path -->\n\nprose\n\n<!-- kbtool-help: config get -->\n"
    filled = SYNC.synced(page, helps)
    assert filled.count(SYNC.END) == 2 and "prose" in filled  # a bare marker swallows nothing after it
    assert "$ kbtool config path --help\nUsage: kbtool config path" in filled
    assert SYNC.synced(filled, helps) == filled
    stale = filled.replace("Print where keras.json lives.", "Print where it was.")
    assert stale != filled and SYNC.synced(stale, helps) == filled


def test_a_marker_naming_no_command_is_an_error():
    with pytest.raises(ValueError, match="no command `kbtool config nope`"):
        SYNC.help_text(["config", "nope"])


def test_the_docs_build_refuses_a_page_whose_help_drifted(monkeypatch):
    class PluginError(Exception):
        pass

    # the docs extra (mkdocs) need not be installed for the test suite: its exception class stands in
    monkeypatch.setitem(sys.modules, "mkdocs", types.ModuleType("mkdocs"))
    exceptions = types.ModuleType("mkdocs.exceptions")
    exceptions.PluginError = PluginError
    monkeypatch.setitem(sys.modules, "mkdocs.exceptions", exceptions)
    hooks = load("docs_hooks", "docs", "hooks.py")
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="commands/config.md"))
    text = read("docs", "commands", "config.md")
    assert hooks.on_page_markdown(text, page, None, None) == text
    drifted = text.replace("Print where keras.json lives.", "Print where it was.")
    with pytest.raises(PluginError, match=re.escape(SYNC.FIX)):
        hooks.on_page_markdown(drifted, page, None, None)


def test_sync_script_check_mode_passes_on_the_committed_pages():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "sync-command-help.py"), "--check"])
    assert result.returncode == 0


# --- the pages' counts and terms agree with kbtool -----------------------------------------------------------------

NUMBERS = {11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen"}
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def doc_pages():
    """README.md and every docs page, relative to the repository, each with its text outside code blocks."""
    for path in ["README.md"] + [os.path.relpath(p, ROOT) for p in SYNC.pages()]:
        yield path, FENCE.sub("", read(path))


def builtin_backends():
    from kbtool.runners import registry

    return list(registry.BUILTIN)


def test_the_readme_and_the_docs_home_name_every_builtin_backend_as_kbtool_backends_does():
    builtin = builtin_backends()
    for path in ("README.md", os.path.join("docs", "index.md"), os.path.join("docs", "concepts", "glossary.md")):
        text = read(path)
        named = [name for name in re.findall(r"`([a-z0-9-]+)`", text) if name in builtin]
        assert set(named) == set(builtin), f"{path} leaves out {sorted(set(builtin) - set(named))}"
    page = read("docs", "commands", "backends.md")
    section = page[page.index("## The built-in backends") :].split("\n## ")[0]
    header, *rows = re.findall(r"^\| ([a-z0-9-]+) \|", section, re.MULTILINE)
    assert header == "backend" and sorted(rows) == sorted(builtin)  # the table: a row per built-in backend


def test_every_count_of_backends_in_the_docs_is_kbtools():
    word = NUMBERS[len(builtin_backends())]
    counts = []
    for path, text in doc_pages():
        for found in re.findall(r"\b(\w+) (?:built-in )?(?:backends|ones)\b", " ".join(text.split())):
            if found.lower() in NUMBERS.values():
                counts.append((path, found.lower()))
    assert counts and all(found == word for _, found in counts), counts


def test_the_glossary_says_what_documented_means_with_every_doc_version_of_the_spec():
    spec = read("specs", "ops.yaml")
    block = spec[spec.index("\ndocs:\n") : spec.index("\n\n", spec.index("\ndocs:\n"))]
    versions = re.findall(r"^  ([a-z0-9.-]+):", block, re.MULTILINE)
    assert len(versions) == 5
    glossary = read("docs", "concepts", "glossary.md")
    entries = dict(re.findall(r"^\*\*([^*]+)\*\*[^\n]*\n((?::|  ).*?)(?=\n\n|\Z)", glossary, re.DOTALL | re.MULTILINE))
    assert "documented" in entries and "doc version" in entries["documented"]
    assert all(f"`{version}`" in entries["doc version"] for version in versions)
    for name in ("numpy", "keras-numpy", "keras3-numpy", "oracle", "reference"):
        assert name in entries, f"the glossary lacks {name}"


def test_every_term_the_readme_introduces_is_in_the_glossary():
    glossary = {term.lower() for term in re.findall(r"^\*\*([^*]+)\*\*", read("docs", "concepts", "glossary.md"), re.M)}
    terms = {term.lower().removeprefix("the ") for term in re.findall(r"\*([a-zA-Z][a-zA-Z ]+)\*", read("README.md"))}
    assert len(terms) >= 6
    assert terms - glossary == set()


def test_every_local_link_of_the_docs_resolves_as_github_shows_them():
    """GitHub shows the pages as files: a relative link or image must name a file of the repository (the site's
    own build, `make docs`, checks its links with --strict)."""
    broken = []
    for path, text in doc_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            file = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), target.split("#")[0]))
            if not os.path.exists(file):
                broken.append(f"{path}: {target}")
    assert broken == []
