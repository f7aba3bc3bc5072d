"""Packaging beyond pyproject.toml: ship the repository's top-level conf/ (Hydra configs)
inside the package as `coevo/conf`, and the eligible-parents example beside it, so an
installed coevo (a wheel, not only an editable checkout) runs from any directory."""

from pathlib import Path

from setuptools import find_packages, setup

# Data directories are listed as packages (Hydra's groups, conf/<group>/*.yaml, as
# coevo.conf.<group>): setuptools warns about each one it finds importable but not listed.
CONFIG_GROUPS = sorted(
    p.name for p in Path(__file__).parent.joinpath("conf").iterdir() if p.is_dir()
)

setup(
    packages=[
        *find_packages(include=["coevo", "coevo.*"]),
        "coevo.conf",
        *(f"coevo.conf.{group}" for group in CONFIG_GROUPS),
        "coevo.experiments.eligible_parents",
        "coevo.experiments.eligible_parents.policies",
    ],
    package_dir={
        "coevo.conf": "conf",
        "coevo.experiments.eligible_parents": "experiments/eligible_parents",
    },
    package_data={
        "coevo.conf": ["*.yaml"],
        **{f"coevo.conf.{group}": ["*.yaml"] for group in CONFIG_GROUPS},
        "coevo.experiments.eligible_parents": ["pairs.yaml"],
        "coevo.experiments.eligible_parents.policies": ["*.npy"],
    },
    exclude_package_data={"coevo.experiments.eligible_parents": ["*.py", "*.csv"]},
)
