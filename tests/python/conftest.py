# The attune package's CPU tests (ctest python_test): the build tree's package on PYTHONPATH and
# its CLI in ATTUNE_BIN, both set by ctest. One small simulated tuning database is shared.
import json
import os
import pathlib
import subprocess

import pytest

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def cli():
    import attune
    return attune.find_cli()


@pytest.fixture
def table_path():
    return str(FIXTURES / "h200-table.json")


@pytest.fixture
def table_json():
    return json.loads((FIXTURES / "h200-table.json").read_text())


@pytest.fixture(scope="session")
def sim_db(tmp_path_factory, cli):
    """A database with an rmsnorm tuned on the simulated device (grid, 24 candidates) and the
    faults problem (every failure class); the reports the CLI printed for them."""
    d = tmp_path_factory.mktemp("simdb")
    db = str(d / "sim.db")
    reports = {}
    for problem, extra in (("rmsnorm", ["--strategy", "grid", "--max-candidates", "24"]),
                           ("faults", ["--strategy", "grid"])):
        out = subprocess.run([cli, "tune", "--backend", "sim", "--problem", problem, "--db", db,
                              "--patience", "0", "--json", *extra],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode in (0, 1), out.stderr
        reports[problem] = json.loads(out.stdout)
    return db, reports
