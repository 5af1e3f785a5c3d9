# attune.Table: a tuned table opened as libattune-rt opens it, its refusals, the fingerprint guard
# and the dispatch decision, without a GPU.
import json

import pytest

import attune

A100 = {"arch": "sm_80", "backend": "cuda", "driver_version": "", "extra": {}, "l2_bytes": 0,
        "max_sm_clock_mhz": 0, "memory_bytes": 85899345920, "name": "NVIDIA A100-SXM4-80GB",
        "runtime_version": "", "sm_count": 108}


def test_rows_and_device(table_path):
    t = attune.Table(table_path)
    assert t.device["name"] == "NVIDIA H200"
    assert not t.device_mismatch
    rows = t.rows()
    assert [r["number"] for r in rows] == list(range(1, 10))
    assert rows[0]["problem"] == "gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096"
    assert rows[0]["config"].startswith("kernel=skinny_tc,")
    bucket = [r for r in rows if r["bucketed"]]
    assert [(r["lo"], r["hi"]) for r in bucket] == [(1, 16), (17, 64), (1, 8)]


def test_lookup_exact_bucket_and_miss(table_path):
    t = attune.Table(table_path)
    hit = t.lookup("gemm:bias=0,dtype=bf16,k=4096,m=16,n=4096")
    assert (hit["tuned"], hit["row"], hit["why"]) == (True, 2, "hit")
    bucketed = t.lookup("gemm:bias=0,dtype=fp16,k=4096,m=3,n=4096")
    assert bucketed["tuned"] and bucketed["why"] == "hit: m=3 in bucket [1, 16]"
    assert bucketed["problem"] == "gemm:bias=0,dtype=fp16,k=4096,m=3,n=4096"
    miss = t.lookup("gemm:bias=0,dtype=bf16,k=4096,m=2,n=4096")
    assert (miss["tuned"], miss["row"], miss["config"]) == (False, 0, None)
    assert miss["why"] == "miss: no row for this shape"
    t.lookup("gemm:bias=0,dtype=bf16,k=4096,m=16,n=4096")
    assert t.counters() == {"hits": 3, "misses": 1, "shapes": 3, "device_mismatch": False}


def test_guard_refuses_rows_on_another_device(table_path):
    t = attune.Table(table_path, device=A100)
    assert t.device_mismatch
    d = t.lookup("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")
    assert not d["tuned"] and d["why"] == "miss: the table was tuned for another device"
    # The same fingerprint as the table's passes the guard.
    same = attune.Table(table_path, device=attune.Table(table_path).device)
    assert same.lookup("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")["tuned"]


def refusal(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(attune.Error) as e:
        attune.Table(str(path))
    assert e.value.code == "bad_table"
    assert str(path) in str(e.value)  # the message names the file
    return str(e.value)


def test_refuses_malformed_tables_whole(tmp_path, table_json):
    text = json.dumps(table_json)
    assert "truncated" in refusal(tmp_path, "truncated.json", text[: len(text) // 2])
    newer = dict(table_json, version=table_json["version"] + 1)
    assert "newer attune" in refusal(tmp_path, "newer.json", json.dumps(newer))
    backend = json.loads(text)
    backend["ops"][0]["rows"][0]["backend"] = "opencl"
    assert "unknown backend 'opencl'" in refusal(tmp_path, "backend.json", json.dumps(backend))
    dup = json.loads(text)
    dup["ops"][0]["rows"].append(dup["ops"][0]["rows"][0])
    assert "duplicates" in refusal(tmp_path, "dup.json", json.dumps(dup))


def test_refuses_a_config_this_build_cannot_plan(tmp_path, table_json):
    if not attune._native.has_runtime:
        pytest.skip("built without CUDA: rows are not planned")
    bad = json.loads(json.dumps(table_json))
    bad["ops"][0]["rows"][0]["config"] = bad["ops"][0]["rows"][0]["config"].replace(
        "kernel=skinny_tc", "kernel=nonexistent")
    assert "cannot run" in refusal(tmp_path, "unplannable.json", json.dumps(bad))


def test_absent_file_and_bad_arguments(tmp_path, table_path):
    with pytest.raises(attune.Error) as e:
        attune.Table(str(tmp_path / "absent.json"))
    assert e.value.code == "bad_table" and "absent.json does not exist" in str(e.value)
    with pytest.raises(attune.Error) as e:
        attune.Table(table_path, device={"name": "no backend"})
    assert e.value.code == "invalid_argument"
    t = attune.Table(table_path)
    with pytest.raises(attune.Error) as e:
        t.lookup("gemm:m=one")
    assert e.value.code == "invalid_argument"


def test_an_object_made_without_init_is_a_type_error_not_a_crash():
    # Class.__new__ without __init__ (copy or pickle code does this): every method says so.
    from attune import _native
    for cls, method in ((_native.Table, "rows"), (_native.Runtime, "close"),
                        (_native.Runtime, "counters"), (_native.Database, "devices")):
        obj = cls.__new__(cls)
        with pytest.raises(TypeError, match="__init__ was not called"):
            getattr(obj, method)()
