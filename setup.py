"""What setuptools builds, beside pyproject.toml (which has the project's metadata).

Here because pyproject.toml cannot say both: every code package found on disk (a new one
ships without editing a list), and the top-level ``data/`` folder (the shipped identity,
pack, skills, prices and dashboard files) installed as the package ``fetch_data``.
``orchestrator/shipped.py`` finds it; tests/cli/test_install.py checks a wheel carries it.
"""

from setuptools import find_packages, setup

CODE = (
    "core",
    "channels",
    "orchestrator",
    "instincts",
    "harnesses",
    "identity",
    "skills",
    "kennel",
)

setup(
    packages=[*find_packages(include=[f"{name}*" for name in CODE]), "fetch_data"],
    package_dir={"fetch_data": "data"},
    package_data={
        "fetch_data": ["**/*"],
        "kennel": ["Dockerfile", "*.js", "*.sh"],
        # The web chat's own script and style (served by Fetch itself: no CDN).
        "channels": ["web/static/*"],
    },
    exclude_package_data={"fetch_data": ["__pycache__/*"]},
)
