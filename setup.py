"""Packaging beyond pyproject.toml: ship the repository's top-level conf/ (Hydra configs)
inside the package as `coevo/conf`, and the eligible-parents example beside it, so an
installed coevo (a wheel, not only an editable checkout) runs from any directory."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["coevo", "coevo.*"]),
        "coevo.conf",
        "coevo.experiments.eligible_parents",
    ],
    package_dir={
        "coevo.conf": "conf",
        "coevo.experiments.eligible_parents": "experiments/eligible_parents",
    },
    package_data={
        "coevo.conf": ["*.yaml", "**/*.yaml"],
        "coevo.experiments.eligible_parents": ["pairs.yaml", "policies/*.npy"],
    },
    exclude_package_data={"coevo.experiments.eligible_parents": ["*.py", "*.csv"]},
)
