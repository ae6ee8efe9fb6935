"""Metadata lives in pyproject.toml (PEP 621). This file lists the packages: every kbtool package plus the top-level
specs/ folder shipped as kbtool/_specs (kbtool/paths.py: an installed kbtool reads kbtool/_specs/, a checkout or an
editable install reads specs/ in place), a mapping pyproject's package discovery cannot express."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kbtool", "kbtool.*"]) + ["kbtool._specs"],
    package_dir={"kbtool._specs": "specs"},
)
