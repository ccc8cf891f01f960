"""Prompts as versioned files next to this module (``extraction_v1.md``, ...).

``load_prompt(name)`` returns the text of ``<name>`` (``.md`` added when no suffix is
given). ``render(template, **values)`` fills named placeholders ``{name}`` for the given
names only, so JSON examples with braces stay untouched. ``split_roles`` cuts a prompt into
its system and user parts at the ``=== USER ===`` line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent
USER_MARKER = "=== USER ==="
_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)


class PromptNotFoundError(FileNotFoundError):
    """No prompt file of that name."""


@lru_cache(maxsize=32)
def load_prompt(name: str) -> str:
    """Text of the prompt file ``name`` (``extraction_v1`` or ``extraction_v1.md``)."""
    path = PROMPTS_DIR / (name if Path(name).suffix else f"{name}.md")
    if path.parent != PROMPTS_DIR or not path.is_file():
        raise PromptNotFoundError(f"no prompt {name!r} in {PROMPTS_DIR}")
    return _COMMENT.sub("", path.read_text(encoding="utf-8"))


def render(template: str, **values: object) -> str:
    """Replace ``{key}`` by ``values[key]`` for the given keys; other braces are kept."""
    if not values:
        return template
    pattern = re.compile(r"\{(" + "|".join(map(re.escape, values)) + r")\}")
    return pattern.sub(lambda m: str(values[m.group(1)]), template)


def split_roles(text: str) -> tuple[str, str]:
    """(system, user) parts of a prompt; no marker: everything is the user part."""
    system, sep, user = text.partition(USER_MARKER)
    if not sep:
        return "", text.strip()
    return system.strip(), user.strip()
