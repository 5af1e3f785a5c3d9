# attune.Database: the store's rows as plain objects, checked against the reports the CLI printed
# for the same runs; refusals of what is not an attune database.
import os
import sqlite3

import pytest

import attune


def test_devices_problems_runs(sim_db):
    db, reports = sim_db
    with attune.Database(db) as d:
        devices = d.devices()
        assert len(devices) == 1 and devices[0]["backend"] == "sim"
        assert devices[0]["key"] == reports["rmsnorm"]["device"]["key"]
        names = {p.name for p in d.problems()}
        assert {"rmsnorm", "faults"} <= names
        runs = d.runs()
        assert [r["status"] for r in runs] == ["done", "done"]
        assert runs[0]["strategy"] == "grid"


def test_measurements_match_the_report(sim_db):
    db, reports = sim_db
    d = attune.Database(db)
    rep = reports["rmsnorm"]["problems"][0]
    rows = d.measurements(problem="rmsnorm")
    # Every candidate measured is one rank-regime row; deploy re-measurements come on top.
    assert len([r for r in rows if r.regime == "rank"]) == rep["measured"]
    assert all(isinstance(r, attune.Measurement) for r in rows)
    ok = [r for r in rows if r.verdict == "ok"]
    assert ok and all(r.median_us > 0 and r.samples > 0 for r in ok)
    assert {r.problem for r in rows} == {"rmsnorm"}
    assert d.measurements(problem="rmsnorm", regime="deploy")
    assert all(r.regime == "deploy" for r in d.measurements(problem="rmsnorm", regime="deploy"))


def test_best_is_the_reports_best(sim_db):
    db, reports = sim_db
    rep = reports["rmsnorm"]["problems"][0]
    (best,) = attune.Database(db).best(problem="rmsnorm")
    assert best.config == rep["best"]["config"]
    assert best.median_us == pytest.approx(rep["best"]["median_us"])
    assert best.regime == "deploy"
    assert best.baseline_config == rep["baseline"]["config"]
    assert best.baseline_us == pytest.approx(rep["baseline"]["median_us"])


def test_failures_carry_the_reports_verdicts(sim_db):
    db, reports = sim_db
    rep = reports["faults"]["problems"][0]
    failures = attune.Database(db).failures(problem="faults")
    counted = {}
    for f in failures:
        if f.regime == "rank":
            counted[f.verdict] = counted.get(f.verdict, 0) + 1
    expected = {v: n for v, n in rep["verdicts"].items() if v != "ok" and n}
    assert counted == expected
    assert all(f.median_us is None for f in failures)


def test_to_pandas(sim_db):
    pandas = pytest.importorskip("pandas")
    db, _ = sim_db
    d = attune.Database(db)
    frame = d.to_pandas(problem="rmsnorm")
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == len(d.measurements(problem="rmsnorm"))
    assert "median_us" in frame.columns


def test_unknown_problem_names_what_it_holds(sim_db):
    db, _ = sim_db
    with pytest.raises(attune.Error) as e:
        attune.Database(db).measurements(problem="gemm_nope")
    assert e.value.code == "invalid_argument" and "rmsnorm" in str(e.value)


def test_refuses_what_is_not_an_attune_database(tmp_path):
    absent = tmp_path / "absent.db"
    with pytest.raises(attune.Error):
        attune.Database(absent)
    assert not absent.exists()  # never created
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 10)
    with pytest.raises(attune.Error):
        attune.Database(text)
    assert text.read_text() == "not a database\n" * 10
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as c:
        c.execute("create table songs (title text)")
    before = foreign.read_bytes()
    with pytest.raises(attune.Error) as e:
        attune.Database(foreign)
    assert "attune" in str(e.value)
    assert foreign.read_bytes() == before
