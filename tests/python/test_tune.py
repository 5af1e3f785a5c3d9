# attune.tune: a run on the simulated device through the CLI; its report is the CLI's --json.
import json
import subprocess

import pytest

import attune


def test_tune_returns_the_json_report(tmp_path, cli):
    db = str(tmp_path / "t.db")
    report = attune.tune(backend="sim", problem="gemm:m=16,n=4096,k=1024", strategy="random",
                         seed=7, max_candidates=8, patience=0, db=db)
    assert report["run"]["strategy"] == "random" and report["run"]["seed"] == 7
    (p,) = report["problems"]
    assert p["measured"] == p["evaluated"] > 0
    assert p["best"]["median_us"] <= p["baseline"]["median_us"]
    # The same command from the shell, answered from the database now: the same schema, the same
    # problem and best config.
    shell = json.loads(subprocess.run(
        [cli, "tune", "--backend", "sim", "--problem", "gemm:m=16,n=4096,k=1024", "--strategy",
         "random", "--seed", "7", "--max-candidates", "8", "--patience", "0", "--db", db,
         "--json"], capture_output=True, text=True, check=True).stdout)
    assert shell.keys() == report.keys()
    assert shell["problems"][0].keys() == p.keys()
    assert shell["problems"][0]["best"]["config"] == p["best"]["config"]
    assert shell["problems"][0]["measured"] == 0  # every config came from the database
    assert [r["strategy"] for r in attune.Database(db).runs()] == ["random", "random"]


def test_strategy_options_and_bad_input(tmp_path):
    with pytest.raises(attune.Error) as e:
        attune.tune(backend="sim", problem="rmsnorm", strategy="mcts",
                    strategy_options={"exploration": -1}, db=str(tmp_path / "x.db"))
    assert e.value.code == "invalid_argument" and "exploration" in str(e.value)
    with pytest.raises(attune.Error) as e:
        attune.tune(backend="sim", problem="no_such_problem", db=str(tmp_path / "x.db"))
    assert e.value.code == "invalid_argument"
