"""Over 200 bad command lines, each refused before any work: exit code 2, one `error:` line on
stderr, no traceback, nothing written (the issue's tester's table, kept as a test).

Every case runs the CLI's `main()` in-process (parse-time failures are cheap), so the whole table
takes a few seconds.
"""
import os
import time

import pytest

from dpcore.cli import main

VAE = ["--model", "vae", "--dataset", "digits", "--rows", "200", "--latent-dim", "2", "--hidden", "8",
       "--epochs", "1", "--batch-size", "100"]
NOT_INT = ["abc", "1.5", "٣٠٠", "1_000", "99999999999999999999999", "", "0x10", "nan", "1e3"]
NOT_FLOAT = ["abc", "nan", "1e999", "٣", "", "1_0", "0x1p3", "--"]


def _cases():
    """(id, argv) — argv may hold RUN / OUT placeholders for the trained run and a fresh path."""
    c = []

    def add(cmd, flag, values, rest=()):
        for v in values:
            c.append((f"{cmd[0]}{flag}={v!r}", [*cmd, *rest, f"{flag}={v}"]))

    # --- integers in ASCII, in range
    add(["account"], "--n", NOT_INT + ["0", "-5"])
    add(["account"], "--batch", NOT_INT + ["0"])
    add(["account"], "--em-iters", NOT_INT + ["0"])
    add(["account"], "--components", ["abc", "٣", "0", "-1"])
    add(["calibrate"], "--n", ["abc", "٣٠٠", "-1"], ["--epsilon", "1"])
    add(["sample", "RUN"], "--n", NOT_INT + ["0", "-3", "10000000000"], ["--out", "OUT.csv"])
    add(["sample", "RUN"], "--seed", NOT_INT + ["-1", "4294967296"], ["--out", "OUT.csv"])
    add(["evaluate", "RUN"], "--n-targets", NOT_INT + ["0", "9", "10000001"])
    add(["evaluate", "RUN"], "--n-samples", ["abc", "٣", "0", "-1", "10000000000"])
    add(["evaluate", "RUN"], "--seed", ["abc", "-1", "99999999999999999999999", "4294967296"])
    add(["evaluate", "RUN"], "--report-rows", ["abc", "0", "5"])
    add(["attack", "RUN"], "--canaries", NOT_INT + ["0", "3", "100000000"])
    add(["attack", "RUN"], "--n-targets", ["abc", "٣", "0", "9", "10000001"])
    add(["attack", "RUN"], "--seed", ["abc", "-1", "99999999999999999999999"])
    add(["train", *VAE], "--seed", ["abc", "-1", "99999999999999999999999", "4294967296", "٣"], ["--out", "OUT"])
    add(["train", *VAE[:-6], "--epochs", "1", "--batch-size", "100"], "--hidden",
        ["abc", "0", "-1", "10000000", "٣٠٠", "1.5"], ["--out", "OUT"])
    add(["train", *VAE[:-6], "--hidden", "8", "--batch-size", "100"], "--epochs", ["abc", "0", "-2", "1e9"],
        ["--out", "OUT"])
    add(["train", "--model", "vae", "--dataset", "digits", "--epochs", "1"], "--latent-dim",
        ["abc", "0", "100000"], ["--out", "OUT"])
    add(["train", "--model", "p3gm", "--dataset", "digits", "--epochs", "1"], "--components",
        ["abc", "0", "1000000"], ["--out", "OUT"])
    add(["train", *VAE], "--rows", ["abc", "0", "-1", "٣٠٠"], ["--out", "OUT"])
    add(["train", *VAE], "--split-seed", ["abc", "-1", "99999999999999999999999"], ["--out", "OUT"])
    add(["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1"], "--seeds",
        NOT_INT + ["0", "-1", "100000000"])
    add(["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1"], "--num-cpus", ["abc", "0", "-4"])
    add(["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1"], "--rows", ["abc", "٣"])
    # --- floats in ASCII, finite where it matters
    add(["account"], "--epochs", NOT_FLOAT + ["0", "-1", "1e12"])
    add(["account"], "--sgd-sigma", NOT_FLOAT + ["0", "-1", "1e-300", "inf"])
    add(["account"], "--pca-sigma", ["abc", "nan", "0", "1e-300"])
    add(["account"], "--em-sigma", ["abc", "nan", "-1"])
    add(["account"], "--delta", NOT_FLOAT + ["0", "1", "-0.5", "2"])
    add(["account", "--model", "dp-vae"], "--sgd-sigma", ["abc", "nan", "0", "1e-300"])
    add(["calibrate"], "--epsilon", NOT_FLOAT + ["0", "-1"])
    add(["calibrate", "--epsilon", "1"], "--encoder-share", ["abc", "nan", "0", "1", "1.5"])
    add(["attack", "RUN"], "--confidence", ["abc", "nan", "0", "1", "2"])
    add(["train", *VAE], "--test-size", ["abc", "nan", "1", "-0.1", "٠٫١"], ["--out", "OUT"])
    add(["train", "--model", "dp-vae", "--dataset", "digits", "--epochs", "1"], "--epsilon",
        ["abc", "nan", "0", "-1", "1e999"], ["--out", "OUT"])
    add(["train", "--model", "dp-vae", "--dataset", "digits", "--epochs", "1"], "--delta",
        ["abc", "nan", "0", "1"], ["--out", "OUT"])
    add(["train", *VAE], "--lr", ["abc", "nan", "1e999"], ["--out", "OUT"])
    # --- names, lists and grids
    for argv in (
        ["datasets", "--schema", ""], ["datasets", "--schema", " "], ["datasets", "--schema", "nosuch"],
        ["datasets", "--schema", "digits"],
        ["attack", "RUN", "--attacks", "dcr,,"], ["attack", "RUN", "--attacks", ""],
        ["attack", "RUN", "--attacks", ","], ["attack", "RUN", "--attacks", "nosuch"],
        ["attack", "RUN", "--attacks", "dcr, ,loss"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--name", ""],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--name", " "],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--name", "x" * 200],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--name", "../evil"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon=1,,2"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon=,1"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon=1,"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon="],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "=1,2"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon=abc"],
        ["sweep", "--model", "dp-vae", "--dataset", "digits", "--grid", "epsilon=nan"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=" + ",".join(map(str, range(1, 20000)))],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1,2", "--grid",
         "hidden=" + ",".join(map(str, range(1, 1500)))],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "hidden=10000000"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--set", "hidden=10000000"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--set", "seed=-1"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--set", "=3"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1", "--seeds", "1001"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "epochs=1,2,3", "--seeds", "1000"],
        ["sweep", "--model", "vae", "--dataset", "digits", "--grid", "nosuch=1"],
        ["sweep", "--model", "vae", "--dataset", "digits"],
        ["sweep", "--model", "nosuch", "--dataset", "digits", "--grid", "epochs=1"],
        ["train", *VAE, "--numeric-bins", "0", "--out", "OUT"],
        ["train", *VAE, "--numeric-bins", "10", "--out", "OUT"],
        ["train", *VAE, "--tabular-heads", "per-column", "--out", "OUT"],
        ["train", *VAE, "--out", ""], ["train", *VAE, "--out", " "], ["train", *VAE, "--out", "."],
        ["train", *VAE, "--out", ".."], ["train", *VAE, "--out", "a" * 200],
        ["train", *VAE, "--out", "OUT/../.."], ["train", *VAE, "--out", "-bad"],
        ["train", *VAE, "--dataset", "../../etc/passwd", "--out", "OUT"],
        ["train", "--model", "vae", "--dataset", "", "--out", "OUT"],
        ["train", "--model", "vae", "--data", "", "--out", "OUT"],
        ["train", "--model", "nosuch", "--dataset", "digits"],
        ["train", *VAE, "--preset", "", "--out", "OUT"],
        ["train", *VAE, "--target", "", "--out", "OUT"],
        ["sample", "RUN", "--out", ""], ["sample", "RUN", "--out", "OUT.exe"],
        ["sample", "", "--out", "OUT.csv"], ["sample", "RUN/nosuch", "--out", "OUT.csv"],
        ["evaluate", ""], ["evaluate", "RUN/nosuch"], ["evaluate", "RUN", "--report", ""],
        ["attack", ""], ["attack", "RUN/nosuch"],
        ["runs", "prune", "--root", ""],
    ):
        c.append((" ".join(a[:30] for a in argv)[:120], argv))
    return c


CASES = _cases()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bad") / "runs" / "r"
    assert main(["train", *VAE, "--out", str(out), "--json"]) == 0
    return out


def test_the_table_is_big_enough():
    assert len(CASES) >= 200, len(CASES)


def test_every_bad_argument_is_one_line_exit_2(run_dir, tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path / "sweeps"))
    failures, slow = [], []
    for i, (label, argv) in enumerate(CASES):
        out = str(tmp_path / f"o{i}")
        argv = [a.replace("RUN", str(run_dir)).replace("OUT", out) for a in argv]
        t0 = time.perf_counter()
        if os.environ.get("TRACE_CASES"):
            print(label, file=open(os.environ["TRACE_CASES"], "a"), flush=True)
        rc, _, err = run_cli(argv)
        seconds = time.perf_counter() - t0
        lines = err.strip("\n").split("\n")
        if rc != 2 or len(lines) != 1 or "Traceback" in err or "error:" not in lines[0]:
            failures.append(f"{label}: rc={rc} err={err[-300:]!r}")
        if seconds > 2:
            slow.append(f"{label}: {seconds:.1f} s")
    assert not failures, f"{len(failures)} of {len(CASES)}:\n" + "\n".join(failures)
    assert not slow, "work started before the check:\n" + "\n".join(slow)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [], left  # nothing written
