from setuptools import find_packages, setup

setup(
    name="kbtool",
    version="0.1.0",
    description="Conformance harness and CLI for the Keras backend API across TensorFlow, Theano and CNTK",
    packages=find_packages(include=["kbtool", "kbtool.*"]),
    package_data={"kbtool": ["reports/templates/*.j2"]},
    python_requires=">=3.9",
    install_requires=[
        "click>=8.1",
        "rich>=13",
        "pyyaml>=6",
        "numpy>=1.23",
        "jsonschema>=4.17",
        "jinja2>=3.1",
    ],
    extras_require={"test": ["pytest>=7"]},
    entry_points={
        "console_scripts": ["kbtool=kbtool.cli:main"],
    },
)
