"""The class file: codes from OS entropy, kept only as salted scrypt hashes; read back as data."""
from __future__ import annotations

import csv
import json

import pytest

from dpcore.classroom import ClassFileError, check_code, load_class_file
from dpcore.classroom.classfile import create_class, parse_class

CHEAP = {"name": "scrypt", "n": 2**10, "r": 8, "p": 1}  # the tests' cost; the CLI uses 2^14


def test_codes_are_unique_random_and_only_their_hashes_are_stored():
    doc, codes = create_class("DP 101", 3, kdf=CHEAP)
    assert list(codes) == ["lecturer", "student-01", "student-02", "student-03"]
    assert len(set(codes.values())) == 4
    text = json.dumps(doc)
    for code in codes.values():
        secret = code.split("-", 1)[1]
        assert secret not in text and secret.replace("-", "") not in text
    salts = [m["salt"] for m in doc["members"]]
    assert len(set(salts)) == 4  # a salt per code: equal codes would not give equal hashes
    again, codes2 = create_class("DP 101", 3, kdf=CHEAP)
    assert set(codes.values()).isdisjoint(codes2.values())  # drawn afresh, never from a seed or the name


def test_each_code_opens_its_own_member_and_nothing_else():
    doc, codes = create_class("DP 101", 2, kdf=CHEAP)
    cf = parse_class(doc)
    for name, code in codes.items():
        member = check_code(cf, code)
        assert member is not None and member.name == name
        assert check_code(cf, " " + code.lower() + " ") == member  # typed by hand
    lecturer, s1 = codes["lecturer"], codes["student-01"]
    assert check_code(cf, s1[:-1] + ("A" if s1[-1] != "A" else "B")) is None
    assert check_code(cf, "01-" + lecturer.split("-", 1)[1]) is None  # another member's secret under my ID
    assert check_code(cf, "") is None and check_code(cf, "99-AAAA") is None


def _doc():
    return create_class("DP 101", 2, kdf=CHEAP)[0]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(extra=1), "unknown field"),
    (lambda d: d.update(format="other"), "not a class file"),
    (lambda d: d["members"][1].update(name="../lecturer"), "not student-NN"),
    (lambda d: d["members"][1].update(role="lecturer"), "role"),
    (lambda d: d["members"][2].update(id="01"), "share a id"),
    (lambda d: d["members"][1].update(code="01-AAAA"), "exactly the fields"),
    (lambda d: d["members"][1].update(hash="zz" * 32), "hex"),
    (lambda d: d["kdf"].update(n=2**30), "cost out of range"),
    (lambda d: d.update(session_hours=-1), "session_hours"),
    (lambda d: d.update(max_wrong=True), "max_wrong"),
    (lambda d: d["members"].pop(0), "exactly one lecturer"),
])
def test_a_class_file_is_data_every_field_checked(edit, message):
    doc = _doc()
    edit(doc)
    with pytest.raises(ClassFileError, match=message):
        parse_class(doc)


def test_a_missing_or_broken_file_is_one_line(tmp_path):
    with pytest.raises(ClassFileError, match="no class file"):
        load_class_file(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ClassFileError, match="cannot read"):
        load_class_file(tmp_path / "bad.json")


def test_class_file_follows_the_environment(tmp_path, monkeypatch):
    from dpcore.classroom import class_file

    monkeypatch.delenv("DPCORE_CLASS", raising=False)
    assert class_file() is None  # not class mode
    path = tmp_path / "class.json"
    path.write_text(json.dumps(_doc()))
    monkeypatch.setenv("DPCORE_CLASS", str(path))
    assert class_file().name == "DP 101"
    path.write_text("[]")  # broken later: class mode never falls back to an open workbench
    with pytest.raises(ClassFileError):
        class_file()


def test_cli_create_prints_codes_once_hashes_them_and_refuses_to_overwrite(tmp_path, run_cli):
    out, codes_csv = tmp_path / "class.json", tmp_path / "codes.csv"
    rc, stdout, stderr = run_cli(["class", "create", "--name", "DP 101", "--students", "2",
                                  "--out", str(out), "--codes", str(codes_csv)])
    assert rc == 0, stderr
    rows = dict(list(csv.reader(codes_csv.open()))[1:])
    assert list(rows) == ["lecturer", "student-01", "student-02"]
    text = out.read_text()
    cf = load_class_file(out)
    for name, code in rows.items():
        assert code in stdout and code.split("-", 1)[1] not in text
        assert check_code(cf, code).name == name
    assert oct(out.stat().st_mode & 0o777) == "0o600" and oct(codes_csv.stat().st_mode & 0o777) == "0o600"
    rc, _, stderr = run_cli(["class", "create", "--name", "X", "--students", "2", "--out", str(out)])
    assert rc == 2 and "exists" in stderr and len(stderr.strip().splitlines()) == 1
    assert out.read_text() == text  # nothing replaced
    rc, _, _ = run_cli(["class", "create", "--name", "X", "--students", "1", "--out", str(out), "--force"])
    assert rc == 0 and load_class_file(out).name == "X"


@pytest.mark.parametrize("argv", [
    ["--name", "X", "--students", "0"], ["--name", "X", "--students", "two"], ["--name", "", "--students", "2"],
    ["--name", "<script>", "--students", "2"], ["--students", "2"], ["--name", "X", "--students", "2000"],
])
def test_cli_bad_arguments_are_one_line_exit_2(tmp_path, run_cli, argv):
    out = tmp_path / "c.json"
    rc, _, stderr = run_cli(["class", "create", *argv, "--out", str(out)])
    assert rc == 2 and len(stderr.strip().splitlines()) == 1 and not out.exists()
