"""The documentation as a site (issue 39): every `hsrtcp` command shown in docs/ and README.md
is a command line hsrtcp accepts, the commands of the pages a new user follows (getting
started, the CLI) run as shown, and the site's build (mkdocs.yml, `make docs`) fails on a
broken link or a missing page.

What is run, and where:

- getting-started.md and cli.md: every command in their sh blocks runs here, in order, in an
  empty directory (``RUN_HERE``); `make wheel` and `pip install` of the wheel run in
  `make test`'s wheel step and tests/python/packaging/test_wheel.py.
- every other page and README.md: each `hsrtcp ...` line is parsed by the CLI (options,
  choices, value ranges), not run: they need captures, results or root that the pages only
  name. A path the command would read is allowed not to exist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
RUN_HERE = ("getting-started.md", "cli.md")
# Lines of RUN_HERE pages that are not hsrtcp commands, and the test that runs them.
RUN_ELSEWHERE = {
    "make wheel": "Makefile wheel (make test) and tests/python/packaging/test_wheel.py",
    "pip install target/wheels/hsrtcp-*.whl": "tests/python/packaging/test_wheel.py (a fresh venv)",
}
FENCE = re.compile(r"^```(\w*)\s*$")
SHELLS = {"sh", "bash", "shell", "console"}


def shell_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every command in the file's shell code blocks: comments
    dropped, continuation lines joined, a leading ``$ `` prompt removed."""
    out, block, pending, start = [], None, "", 0
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line.strip())
        if m:
            block = m.group(1) if block is None else None
            continue
        if block not in SHELLS:
            continue
        text = line.strip()
        if not pending:
            start = no
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        text = (pending + text).strip()
        pending = ""
        text = _uncomment(text.removeprefix("$ "))
        if text and not text.startswith("#"):
            out.append((start, text))
    return out


def _uncomment(text: str) -> str:
    """``text`` as written (quotes, ``$(...)``) up to a comment: '#' after whitespace, outside quotes."""
    for m in re.finditer(r"\s#", text):
        before = text[:m.start()]
        if before.count('"') % 2 == 0 and before.count("'") % 2 == 0:
            return before.strip()
    return text.strip()


def hsrtcp_args(command: str) -> list[str] | None:
    """The arguments after `hsrtcp` (also `python -m hsrtcp`, `.venv/bin/hsrtcp`, `sudo`,
    environment assignments), or None for another program."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and (words[0] in ("sudo", "env") or re.match(r"^[A-Z_][A-Z0-9_]*=", words[0])):
        words = words[1:]
    if words[:1] and Path(words[0]).name == "hsrtcp":
        return words[1:]
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1:3] == ["-m", "hsrtcp"]:
        return words[3:]
    return None


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


PLACEHOLDER = re.compile(r"^\[?-*[A-Za-z0-9-]*=?[A-Z][A-Z0-9_]+([.,/{\]].*)?$")


def is_synopsis(args: list[str]) -> bool:
    """A usage line with placeholders (``KIND``, ``[--flow ID]``, ``FILE.{png,svg}``)."""
    return any(a.startswith("[") or (PLACEHOLDER.match(a) and not a.startswith("-")) for a in args)


def _subcommand(args: list[str]):
    """(the click command ``args`` name, the words after its name)."""
    from hsrtcp.cli.group import cli

    cmd, rest = cli, list(args)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), rest[0])
        if sub is None:
            return None, rest
        cmd, rest = sub, rest[1:]
    return cmd, rest


def parse(args: list[str]) -> str | None:
    """Parse ``args`` with hsrtcp's click commands without running them; the usage error, or
    None. A synopsis line (placeholders) is checked for its command and option names only."""
    from hsrtcp.cli.group import cli

    if is_synopsis(args):
        cmd, rest = _subcommand(args)
        if cmd is None:
            return f"no such command {rest[0]!r}"
        known = {o for p in cmd.get_params(click.Context(cmd)) for o in p.opts + p.secondary_opts}
        unknown = [w.strip("[]") for w in rest if w.strip("[").startswith("-") and w.strip("[]").split("=")[0] not in known]
        return f"no such option: {', '.join(unknown)}" if unknown else None
    cmd, rest = _subcommand(args)
    if cmd is None:
        return f"no such command {rest[0]!r}"
    name = args[len(args) - len(rest) - 1] if len(rest) < len(args) else "hsrtcp"
    try:
        cmd.make_context(name, rest)
    except click.exceptions.Exit:  # --help, --version
        return None
    except click.BadParameter as exc:
        if "does not exist" in exc.format_message():
            return None  # a file the page names; the command line itself is right
        return exc.format_message()
    except click.UsageError as exc:
        return exc.format_message()
    return None


def test_the_extraction_finds_commands_and_drops_comments(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('text\n```sh\nhsrtcp analyze a.pcap -o out   # note\nhsrtcp plot tsg out \\\n  --flow 0 -o x.svg\n'
                    '```\n```python\nhsrtcp.analyze("x")\n```\n```sh\n$ python -m hsrtcp query out "select 1 # no"\n```\n')
    assert shell_lines(page) == [(3, "hsrtcp analyze a.pcap -o out"), (4, "hsrtcp plot tsg out  --flow 0 -o x.svg"),
                                 (11, 'python -m hsrtcp query out "select 1 # no"')]
    assert hsrtcp_args('python -m hsrtcp query out "select 1 # no"') == ["query", "out", "select 1 # no"]
    assert hsrtcp_args("sudo $(which hsrtcp) campaign c.toml") is None
    assert hsrtcp_args("make demo") is None
    assert parse(["analyze", "x.pcap", "--workers", "0"]) is not None
    assert parse(["analyze", "x.pcap", "--no-such-option"]) is not None
    assert parse(["no-such-command"]) is not None
    assert parse(["model", "predict", "--p-d", "x"]) is not None  # a nested group's command
    assert is_synopsis(["plot", "KIND", "RESULTS", "[--flow", "ID]", "-o", "FILE.{png,svg,pdf}"])
    assert parse(["plot", "KIND", "RESULTS", "[--flow", "ID]", "-o", "FILE.{png,svg}"]) is None
    assert parse(["plot", "KIND", "RESULTS", "[--flows", "ID]"]) is not None
    assert not is_synopsis(["analyze", "trace.pcap", "-o", "out", "--radio-offset", "0.04", "--carrier", "M"])


def test_every_hsrtcp_command_in_the_docs_parses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths of the pages do not exist here: nothing is read
    found, bad = 0, []
    for page in doc_pages():
        for no, command in shell_lines(page):
            args = hsrtcp_args(command)
            if args is None:
                continue
            found += 1
            error = parse(args)
            if error:
                bad.append(f"{page.relative_to(ROOT)}:{no}: {command}\n    {error}")
    assert found >= 40
    assert not bad, "commands in the docs that hsrtcp does not accept:\n" + "\n".join(bad)


def test_getting_started_and_cli_commands_run_as_shown(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    work = tmp_path / "work"
    work.mkdir()
    ran = []
    for name in RUN_HERE:
        for no, command in shell_lines(DOCS / name):
            if command in RUN_ELSEWHERE:
                continue
            assert hsrtcp_args(command) is not None, f"{name}:{no}: {command!r} is neither run here nor listed"
            r = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                               timeout=600)
            allowed = (0, 1) if hsrtcp_args(command)[:1] == ["doctor"] else (0,)
            assert r.returncode in allowed, f"{name}:{no}: {command}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
            ran.append(command)
    assert "hsrtcp demo -o out" in ran and "hsrtcp doctor" in ran and len(ran) >= 10
    assert (work / "out" / "flows.parquet").is_file() and (work / "report.html").is_file()
    assert (work / "tsg.svg").is_file()


def test_every_command_of_the_run_pages_is_accounted_for():
    for name in RUN_HERE:
        for no, command in shell_lines(DOCS / name):
            assert hsrtcp_args(command) is not None or command in RUN_ELSEWHERE, f"{name}:{no}: {command}"


# --- the site -----------------------------------------------------------------------------------

MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"


def build_site(tmp_path: Path, edit=None) -> subprocess.CompletedProcess:
    """Build a copy of the site (mkdocs.yml and docs/; the API pages read python/ where it is)
    after ``edit(docs_dir)``, with the same strictness as `make docs`."""
    if not MKDOCS.exists():
        message = f"{MKDOCS} missing: run `make docs` first"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    config = (ROOT / "mkdocs.yml").read_text()
    assert "paths: [python]" in config
    config = config.replace("paths: [python]", f"paths: [{ROOT / 'python'}]")
    (tmp_path / "mkdocs.yml").write_text(config)
    if edit:
        edit(docs, tmp_path / "mkdocs.yml")
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    r = build_site(tmp_path)
    assert r.returncode == 0, r.stderr
    site = tmp_path / "target" / "site"
    for page in ("index.html", "getting-started/index.html", "cli/index.html", "api/index.html",
                 "metrics/index.html", "formats/flows/index.html", "lab/index.html", "study/index.html",
                 "search/search_index.json"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text()
    # the API reference comes from the docstrings and from the compiled core's stub
    assert "analyze_to" in api and "ParquetOut" in api and "window_s" in api


def test_the_site_build_fails_on_a_broken_link(tmp_path):
    def broken(docs, config):
        with open(docs / "cli.md", "a") as f:
            f.write("\nSee [the missing page](no-such-page.md).\n")

    r = build_site(tmp_path, broken)
    assert r.returncode != 0
    warnings = [line for line in r.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "'no-such-page.md'" in warnings[0], r.stderr


def test_the_site_build_fails_on_a_broken_anchor(tmp_path):
    def broken(docs, config):
        with open(docs / "cli.md", "a") as f:
            f.write("\nSee [doctor](getting-started.md#no-such-section).\n")

    r = build_site(tmp_path, broken)
    assert r.returncode != 0 and "no-such-section" in r.stderr


def test_the_site_build_fails_on_a_page_missing_from_the_nav_or_from_docs(tmp_path):
    def extra_page(docs, config):
        (docs / "orphan.md").write_text("# A page no one reaches\n")

    r = build_site(tmp_path / "a", extra_page)
    assert r.returncode != 0 and "orphan.md" in r.stderr

    def nav_to_nothing(docs, config):
        (docs / "design.md").unlink()

    r = build_site(tmp_path / "b", nav_to_nothing)
    assert r.returncode != 0 and "design.md" in r.stderr


# --- files the pages name -------------------------------------------------------------------

REPO_PATH = re.compile(r"(?<![\w/.$-])(?:scripts|campaigns|scenarios|ebpf|bench|data|tests|crates|python)/[\w./-]*\w\.\w+")
# made by a command, not committed: the page says which (bench/README.md: `make bench`)
GENERATED = ("bench/work/",)


def test_every_repository_file_a_page_names_exists():
    """A page naming `scripts/x.py` or `campaigns/y.toml` that is gone sends the reader to
    nothing (issue 38: scripts/hsrbbr_compare.py outlived by the docs; README's
    campaigns/example.toml never existed)."""
    missing = []
    for page in doc_pages():
        for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for path in REPO_PATH.findall(line):
                if not path.startswith(GENERATED) and not (ROOT / path).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{no}: {path}")
    assert not missing, "files the docs name that the repository does not have:\n" + "\n".join(missing)
