from setuptools import find_packages, setup

setup(
    name="kbtool",
    version="0.1.0",
    description="Conformance harness and CLI for the Keras backend API across TensorFlow, Theano and CNTK",
    # Every kbtool package, plus the top-level specs/ folder shipped as kbtool/_specs (see kbtool/paths.py:
    # an installed kbtool reads kbtool/_specs/, a checkout or editable install reads specs/ in place).
    packages=find_packages(include=["kbtool", "kbtool.*"]) + ["kbtool._specs"],
    package_dir={"kbtool._specs": "specs"},
    package_data={
        "kbtool._specs": ["*.yaml", "*.json"],  # the spec, known differences, timings.json (for --shard)
        "kbtool.reports": ["templates/*.j2", "*.json"],
        "kbtool.bench": ["templates/*.j2", "*.json"],
    },
    python_requires=">=3.9",
    install_requires=[
        "click>=8.1",
        "rich>=13",
        "pyyaml>=6",
        "numpy>=1.23",
        "jsonschema>=4.17",
        "jinja2>=3.1",
        "regex>=2023",
        "hypothesis>=6.100",
        "scipy>=1.10",  # bench's regression gate: Mann-Whitney U
    ],
    extras_require={"test": ["pytest>=7", "pytest-xdist>=3", "wheel"]},
    entry_points={
        "console_scripts": ["kbtool=kbtool.cli:main"],
        "pytest11": ["kbtool = kbtool.pytest_plugin"],  # `pytest --kbtool` (inert without the flag)
    },
)
