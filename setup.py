"""Package discovery: ``agents/`` and ``wrappers/`` install as ``tepa_envs.agents`` and
``tepa_envs.wrappers`` (see ``[tool.setuptools.package-dir]``), with every sub-package
found automatically so none is left out of the wheel."""

from setuptools import find_packages, setup

PACKAGES = find_packages(include=["tepa_envs", "tepa_envs.*"])
for folder in ("agents", "wrappers"):
    PACKAGES += [f"tepa_envs.{folder}"] + [f"tepa_envs.{folder}.{name}" for name in find_packages(folder)]

setup(packages=PACKAGES)
