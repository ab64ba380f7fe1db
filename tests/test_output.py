"""Output files: checked before any work, atomic, the umask's permissions, symlinks written through."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optplan import registry
from optplan.cli import main
from optplan.core.buffer import Buffer, Memory
from optplan.core.errors import FormatError
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import output, read_placements, write_problem

REPO = Path(__file__).resolve().parents[1]
ONE = Problem((Buffer("a", 4, 0, 2), Buffer("b", 8, 1, 3), Buffer("c", 4, 2, 4)))
TWO = Problem((Buffer("a", 4, 0, 2), Buffer("b", 8, 1, 3)), (Memory("sram", 8), Memory("dram")))


@pytest.fixture
def files(tmp_path: Path) -> Path:
    write_problem(ONE, tmp_path / "one.csv")
    write_problem(TWO, tmp_path / "two.json")
    return tmp_path


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command's expensive step fails the test if it is reached."""
    def reached(*args: object, **kwargs: object) -> None:
        raise AssertionError("the work started before the output path was checked")
    monkeypatch.setattr(registry, "solve", reached)
    monkeypatch.setattr("optplan.formats.lp_io.export_model", reached)
    monkeypatch.setattr("optplan.formats.lp_io.import_solution", reached)
    monkeypatch.setattr("optplan.report.layout.draw_layout", reached)
    monkeypatch.setattr("optplan.frontends.torch_export.extract", reached)


BAD = [("missing/plan.json", "does not exist"), ("plan.txt", "unknown plan extension '.txt'"),
       ("plan", "unknown plan extension '(none)'"), ("adir.json", "is a directory")]


@pytest.mark.parametrize("out, says", BAD)
def test_solve_checks_output_before_solving(files: Path, no_work: None, capsys: pytest.CaptureFixture, out: str, says: str) -> None:
    (files / "adir.json").mkdir()
    before = sorted(files.iterdir())
    t0 = time.perf_counter()
    code = main(["solve", str(files / "one.csv"), "--time-limit", "60", "-o", str(files / out)])
    err = capsys.readouterr().err
    assert time.perf_counter() - t0 < 1.0
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert sorted(files.iterdir()) == before  # nothing written, no temporary left


def test_csv_plan_for_two_memories_is_refused_before_solving(files: Path, no_work: None, capsys: pytest.CaptureFixture) -> None:
    code = main(["solve", str(files / "two.json"), "-o", str(files / "plan.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "holds one memory" in err and "2 memories" in err
    assert not (files / "plan.csv").exists()


@pytest.mark.parametrize("argv, says", [
    (["export-model", "{one}", "-o", "{d}/m.txt"], "unknown model extension '.txt'; use .lp or .mps"),
    (["export-model", "{one}", "-o", "{d}/no/m.lp"], "does not exist"),
    (["import-solution", "{one}", "{d}/sol.txt", "-o", "{d}/p.yaml"], "unknown plan extension '.yaml'"),
    (["import-solution", "{two}", "{d}/sol.txt", "-o", "{d}/p.csv"], "holds one memory"),
    (["plot", "{one}", "{d}/p.json", "-o", "{d}/p.gif"], "unknown picture extension '.gif'"),
    (["extract", "{d}/m.pt2", "-o", "{d}/p.xml"], "unknown problem extension '.xml'"),
    (["convert", "{two}", "{d}/p.csv"], "holds one memory"),
    (["convert", "{one}", "{d}/no/p.json"], "does not exist"),
])
def test_every_writing_command_checks_first(files: Path, no_work: None, capsys: pytest.CaptureFixture, argv: list[str], says: str) -> None:
    names = {"one": files / "one.csv", "two": files / "two.json", "d": files}
    code = main([a.format(**names) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), output.atomic_output(target) as name:
        Path(name).write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_failed_write_without_unnamed_files_removes_its_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)  # the fallback: a hidden named temporary
    with pytest.raises(RuntimeError), output.atomic_output(tmp_path / "plan.json") as name:
        assert Path(name).name.startswith(".plan.json.")
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
    output.write_text(tmp_path / "plan.json", "new")
    assert (tmp_path / "plan.json").read_text() == "new" and len(list(tmp_path.iterdir())) == 1


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="unnamed files (O_TMPFILE) are Linux-only")
def test_sigkill_during_a_write_leaves_only_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    code = ("import sys, time; from optplan.formats.output import atomic_output\n"
            f"with atomic_output({str(target)!r}) as name:\n"
            "    f = open(name, 'w'); f.write('x' * 100000); f.flush(); print('writing', flush=True); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout is not None and child.stdout.readline() == "writing\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


@pytest.mark.parametrize("name", ["plan.json", "plan.csv", "model.lp", "model.mps", "problem.json", "layout.png"])
def test_new_files_follow_the_umask_and_overwrites_keep_their_mode(files: Path, capsys: pytest.CaptureFixture, name: str) -> None:
    out = files / name
    argv = {"plan": ["solve", str(files / "one.csv"), "--planner", "greedy-size", "-o", str(out)],
            "model": ["export-model", str(files / "one.csv"), "-o", str(out)],
            "problem": ["convert", str(files / "one.csv"), str(out)],
            "layout": ["plot", str(files / "one.csv"), str(files / "plan.json"), "-o", str(out)]}[out.stem]
    if out.stem == "layout":
        assert main(["solve", str(files / "one.csv"), "--planner", "greedy-size", "-o", str(files / "plan.json")]) == 0
    old = os.umask(0o022)
    try:
        assert main(argv) == 0
        assert out.stat().st_mode & 0o777 == 0o644
        out.chmod(0o640)
        assert main(argv) == 0
        assert out.stat().st_mode & 0o777 == 0o640
        os.umask(0o077)
        out.unlink()
        assert main(argv) == 0
        assert out.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
    capsys.readouterr()
    assert not [p for p in files.iterdir() if p.name.endswith(".tmp")]


def test_a_symlink_at_the_output_is_written_through(files: Path, capsys: pytest.CaptureFixture) -> None:
    (files / "real").mkdir()
    target = files / "real" / "plan.json"
    target.write_text("old")
    link = files / "plan.json"
    link.symlink_to(target)
    assert main(["solve", str(files / "one.csv"), "--planner", "greedy-size", "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["status"] in ("OPTIMAL", "FEASIBLE")
    assert validate(ONE, read_placements(target, ONE)) == []
    capsys.readouterr()


def test_check_output_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"x\.csv: MiniMalloc CSV holds one memory without relative placements, "
                                          r"but the problem has relative placements; use \.json"):
        output.check_output(tmp_path / "x.csv", "problem", 1, relative=True)
    output.check_output(tmp_path / "x.CSV", "plan")  # extensions are case-insensitive, as when reading


# -- issue 30: outputs are regular files, and a destination that cannot take one is refused before the work --

def _special(files: Path, kind: str) -> Path:
    """A path whose write would replace something that is not a regular file (in ``files``)."""
    if kind == "fifo":
        os.mkfifo(files / "fifo.json")
        return files / "fifo.json"
    if kind == "char-device":  # /dev/null's numbers, made here (root only): a failure replaces this copy, not /dev/null
        os.mknod(files / "null.json", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return files / "null.json"
    if kind == "loop":
        (files / "a.json").symlink_to(files / "b.json")
        (files / "b.json").symlink_to(files / "a.json")
        return files / "a.json"
    (files / "adir").mkdir()
    target = {"link-to-fifo": _special(files, "fifo"), "link-to-dir": files / "adir"}[kind]
    (files / "link.json").symlink_to(target)
    return files / "link.json"


def _entries(folder: Path) -> dict[str, tuple[int, ...]]:
    """Each entry's kind, inode, size, and modification and change times: what writing, replacing or
    creating changes. Not the access time: following a symlink to refuse it may update the link's
    (relatime, when a second has passed since it was made: a flake under load)."""
    return {p.name: (s.st_mode, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)
            for p in folder.iterdir() for s in [os.lstat(p)]}


SPECIAL = ["fifo", "link-to-fifo", "link-to-dir", "loop"] + (["char-device"] if os.geteuid() == 0 else [])


@pytest.mark.parametrize("kind", SPECIAL)
def test_an_output_that_is_not_a_regular_file_is_refused_before_the_work(files: Path, no_work: None, capsys: pytest.CaptureFixture,
                                                                       kind: str) -> None:
    out = _special(files, kind)
    before = _entries(files)
    code = main(["solve", str(files / "one.csv"), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("symlink loop" if kind == "loop" else "an output must be a regular file") in err
    assert _entries(files) == before  # untouched, no temporary left
    with pytest.raises(FormatError):  # the writer refuses too (the library's write_plan, write_problem)
        output.write_text(out, "x")
    assert _entries(files) == before


def _unwritable(tmp_path: Path) -> Path:
    """A directory this process cannot create a file in: /sys refuses root too (os.access says yes)."""
    if os.geteuid() == 0:
        return Path("/sys")
    (tmp_path / "ro").mkdir(mode=0o500)
    return tmp_path / "ro"


def test_an_unwritable_destination_is_found_before_the_work(files: Path, no_work: None, capsys: pytest.CaptureFixture) -> None:
    where = _unwritable(files)
    before = sorted(where.iterdir())
    code = main(["solve", str(files / "one.csv"), "-o", str(where / "plan.json")])
    err = capsys.readouterr().err
    assert code == 2 and "plan.json: cannot write: " in err and len(err.strip().splitlines()) == 1, err
    assert sorted(where.iterdir()) == before
