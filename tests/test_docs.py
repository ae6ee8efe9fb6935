"""The README stays short and points at docs/; the docs site's pages, links and --help markers stay whole (the
site itself is built with `mkdocs build --strict` by `make docs`, in CI's `make lint`)."""

import os
import re

import click
import yaml

from kbtool.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
MARKER = re.compile(r"<!-- kbtool-help: ([a-z0-9 -]+?) -->")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def nav_pages(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from nav_pages(value)


def test_readme_is_short_and_names_the_two_commands():
    text = read("README.md")
    assert len(text.splitlines()) <= 120
    assert "make check" in text and "make test" in text  # .ci/run calls make test
    assert "reports/parity.png" in text and os.path.isfile(os.path.join(ROOT, "reports", "parity.png"))


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", read("README.md"))
    local = [link for link in links if "://" not in link]
    assert len(local) > 20
    missing = [link for link in local if not os.path.exists(os.path.join(ROOT, link))]
    assert missing == []


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    config = yaml.safe_load(read("mkdocs.yml"))
    nav = set(nav_pages(config["nav"]))
    pages = {
        os.path.relpath(os.path.join(folder, name), DOCS)
        for folder, _, names in os.walk(DOCS)
        for name in names
        if name.endswith(".md")
    }
    assert nav == pages


def test_help_markers_name_real_commands_and_every_command_has_its_help_in_the_docs():
    embedded = set()
    for folder, _, names in os.walk(DOCS):
        for name in names:
            if name.endswith(".md"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    embedded.update(tuple(m.split()) for m in MARKER.findall(f.read()))

    def leaves(command, path):
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                yield from leaves(command.get_command(ctx, name), path + (name,))
        else:
            yield path

    commands = set(leaves(main, ()))
    assert embedded - commands == set(), "markers naming no command"
    assert commands - embedded == set(), "commands whose --help no docs page embeds"
