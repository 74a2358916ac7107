"""bench/dpsgd.py on tiny networks: every row carries the machine's load beside its ratios (load
average before/after, busy CPUs of all), in the table and in --json; no timing is asserted."""
import importlib.util
import json
from pathlib import Path

import torch
from torch import nn

SPEC = importlib.util.spec_from_file_location("bench_dpsgd", Path(__file__).parents[1] / "bench" / "dpsgd.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def tiny_models():
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    return [("tiny", net, bench.decoder_loss, (bench.BATCH, 4), (bench.BATCH, 3))]


def run(monkeypatch, capsys, *flags):
    monkeypatch.setattr(bench, "make_models", tiny_models)
    threads = torch.get_num_threads()
    try:
        assert bench.main(["--repeats", "1", "--warmup", "0", "--threads", "1", *flags]) == 0
    finally:
        torch.set_num_threads(threads)
    return capsys.readouterr().out


def test_json_rows_carry_the_load(monkeypatch, capsys):
    row = json.loads(run(monkeypatch, capsys, "--json", "--clock", "wall").strip())
    assert row["model"] == "tiny" and row["clock"] == "wall" and row["dp_over_plain"] > 0
    assert row["load_avg_1min_before"] >= 0 and row["load_avg_1min_after"] >= 0
    assert row["cpus"] >= 1 and 0 < row["own_cpus"]
    # the noise draw is reported beside the ratio, and what is left is dp minus it
    assert row["noise_ms"] > 0
    assert abs(row["dp_without_noise_over_plain"] - (row["dp_ms"] - row["noise_ms"]) / row["plain_ms"]) < 2e-3
    if row["busy_cpus"] is not None:                     # /proc/stat: Linux only
        assert 0 <= row["busy_cpus"] <= row["cpus"] + 1e-6


def test_table_prints_the_load_beside_the_ratio(monkeypatch, capsys):
    lines = run(monkeypatch, capsys).splitlines()
    assert "dp/pl" in lines[0] and "load 1 min" in lines[0] and "busy/cpus" in lines[0]
    assert lines[1].startswith("tiny") and "→" in lines[1]
    assert "wall clock" in lines[-1] and "load" in lines[-1]
