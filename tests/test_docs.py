"""The README and the docs site stay true to the code: the site builds with ``mkdocs build --strict``
(a broken link, anchor, snippet or API reference fails it), every CLI flag is documented, every
``optplan`` command shown parses, and the README keeps its shape."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from doc_blocks import PAGES, REPO, all_blocks, commands, optplan_args

from optplan import cli, registry

README = REPO / "README.md"
RESULTS = REPO / "experiments" / "results"
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=600)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    run = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert run.returncode == 0, run.stdout + run.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("solve", "Problem", "Buffer", "Memory", "Plan", "validate", "lower_bounds", "read_problem",
                 "write_plan", "extract_training", "make_algo", "memory_planning_pass"):
        assert re.search(rf'id="optplan\.[\w.]*\b{name}"', api), name


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The same site with one link to a page that does not exist: strict mode must refuse it."""
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)  # the results symlink is copied as the files it points to
    (tmp_path / "optplan").symlink_to(REPO / "optplan")  # snippets and the API reference read the package
    (docs / "index.md").write_text((docs / "index.md").read_text() + "\nSee [the moon](moon.md).\n")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    run = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert run.returncode != 0
    assert "moon.md" in run.stdout + run.stderr


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _sections(page: str) -> dict[str, str]:
    """``## heading`` -> its text, for docs/cli.md."""
    parts = re.split(r"^## (.+)$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_command_and_flag_is_in_the_cli_page() -> None:
    sections = _sections((REPO / "docs" / "cli.md").read_text())
    for name, parser in _subcommands().items():
        section = next((text for title, text in sections.items() if name in title.split()), None)
        assert section is not None, f"docs/cli.md has no section for `optplan {name}`"
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert re.search(rf"`{re.escape(flag)}[ `]", section), f"optplan {name} {flag} is not in docs/cli.md"


def test_every_command_shown_parses(capsys: pytest.CaptureFixture[str]) -> None:
    """Each ``optplan ...`` line of a console or bash block, in the README and docs/, is accepted by
    the real parser: a renamed or removed flag fails here."""
    shown = [(b.where, cmd) for b in all_blocks() if b.lang in ("console", "bash") for cmd, _ in commands(b)]
    assert len(shown) >= 10
    for where, cmd in shown:
        try:
            cli._parser().parse_args(optplan_args(cmd))
        except SystemExit:
            pytest.fail(f"{where}: `{cmd}` does not parse: {capsys.readouterr().err}")


def test_every_extra_named_exists() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for page in [*PAGES, REPO / "experiments" / "results" / "README.md"]:
        for group in re.findall(r'pip install -e "\.\[([\w,]+)\]"', page.read_text()):
            assert set(group.split(",")) <= extras, f"{page.name}: unknown extra in {group}"


def test_the_readme_keeps_its_shape() -> None:
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 150
    assert max(map(len, lines)) <= 400
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    first = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert ci in first, "the README's test command must be what .ci/run runs"
    assert "pip install -e . && optplan solve models/" in first and (REPO / "models" / "gpt2.json").exists()
    table = text.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith(("| instances", "| ---"))]
    assert 1 <= len(rows) <= 8
    for row in rows:
        assert re.search(r"\]\(experiments/results/[\w/]+\.md\)", row), row


@pytest.mark.parametrize("page", [README, RESULTS / "README.md", *sorted((REPO / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the page names a file of the repository (the README is not part of
    the site, so mkdocs does not check it)."""
    for target in _LINK.findall(page.read_text()):
        if "://" in target or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.relative_to(REPO)}: broken link {target}"


def test_the_results_index_lists_every_results_file() -> None:
    index = (RESULTS / "README.md").read_text()
    listed = set(_LINK.findall(index))
    files = {p.relative_to(RESULTS).as_posix() for p in RESULTS.glob("*.md") if p.name != "README.md"}
    assert files | {"study/summary.md"} <= listed, sorted(files - listed)


def test_the_planners_page_names_exactly_the_registered_planners() -> None:
    page = (REPO / "docs" / "planners.md").read_text()
    named = set(re.findall(r"^\| `([a-z][a-z0-9-]+)` \|", page, flags=re.M)) | {"auto"}
    assert named == set(registry.names())


def test_the_architecture_picture_is_the_import_contract() -> None:
    """The SVG names the layers of pyproject's import-linter contract, top to bottom in its order."""
    contract = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contract if c["type"] == "layers")["layers"]
    svg = (REPO / "docs" / "architecture.svg").read_text()
    y = {name: float(m) for m, name in re.findall(r'<text x="[\d.]+" y="([\d.]+)"[^>]*font-weight="bold">(optplan[\w.]*)<', svg)}
    assert set(y) == {p.strip() for layer in layers for p in layer.split("|")}
    order = [max(y[p.strip()] for p in layer.split("|")) for layer in layers]
    assert order == sorted(order), "the picture's layers are not in the contract's order"
    assert "architecture.svg" in (REPO / "docs" / "architecture.md").read_text()
