"""The README's commands still run: every `krag ...` line of its shell blocks names a real
command and real options, and the cheap read-only ones answer on a seeded database."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.ui.test_ask_cli import _seed, krag
from ui.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_BLOCK = re.compile(r"```(?:bash|sh)\n(.*?)```", re.S)
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def readme_commands() -> list[str]:
    """Each `krag ...` line of the README's shell blocks, its comment dropped."""
    lines = [line.split(" #", 1)[0].strip() for block in _BLOCK.findall(README.read_text("utf-8"))
             for line in block.splitlines()]
    return [line for line in lines if line.startswith("krag ")]


def resolve(words: list[str]) -> tuple[Any, list[str]]:
    """The command a README line names (typer's own click objects), and the path of names
    leading to it."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        if word not in getattr(command, "commands", {}):
            break
        command = command.commands[word]
        path.append(word)
    return command, path


def test_the_readme_shows_krag_commands() -> None:
    assert len(readme_commands()) >= 6  # ingest, status, ask, remove, reembed, ui, mcp, token


@pytest.mark.parametrize("line", readme_commands())
def test_each_readme_command_and_option_exists(line: str) -> None:
    words = shlex.split(line.replace("[", " ").replace("]", " "))[1:]
    command, path = resolve(words)
    assert path, f"{line!r} names no krag command"
    assert not hasattr(command, "commands"), f"{line!r} stops at the group {path}"
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for option in _OPTION.findall(line):
        assert option in known, f"{line!r}: krag {' '.join(path)} has no option {option}"


@pytest.mark.slow
def test_the_cheap_readme_commands_run(db_url: str) -> None:
    """`krag status` and a README `krag ask ... --json` answer on a seeded database."""
    _seed(db_url)
    status = krag(["status"], db_url)
    assert status.returncode == 0, status.stderr
    ask = next(line for line in readme_commands() if line.startswith("krag ask "))
    question = shlex.split(ask)[2]
    out = krag(["ask", question, "--json", "--max-rounds", "2"], db_url)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["answer"]
