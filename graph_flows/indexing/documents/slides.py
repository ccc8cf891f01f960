"""PowerPoint (.pptx) as Markdown with python-pptx: one section per slide.

Each slide starts with ``# Slide N: <its title>`` (``# Slide N`` when it has none), so every
passage of a slide carries its number and title as its section path, and a citation can say
"slide 4". Then its shapes in reading order (top to bottom, left to right, groups opened):
text of body placeholders as list items indented by level, other text boxes as paragraphs,
tables as readable rows (:func:`~graph_flows.indexing.documents.tables.table_lines`), a
chart's title; the speaker notes last, under ``## Notes``. Pictures are left out.
Title: the first slide title, else the core ``title`` property (PowerPoint fills that with
"PowerPoint Presentation" by default).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.tables import table_lines


def convert_pptx(path: Path) -> tuple[str | None, Iterator[str], dict[str, Any]]:
    """(title, Markdown blocks, metadata) of a PowerPoint file."""
    from pptx import Presentation

    deck = Presentation(str(path))
    slides = list(deck.slides)
    first_title = next((t for t in (_title(s) for s in slides) if t), None)
    title = first_title or (deck.core_properties.title or "").strip() or None

    def blocks() -> Iterator[str]:
        for number, slide in enumerate(slides, start=1):
            name = _title(slide)
            yield f"# Slide {number}: {name}\n\n" if name else f"# Slide {number}\n\n"
            title_shape = slide.shapes.title
            for shape in _ordered(slide.shapes):
                if title_shape is None or shape.shape_id != title_shape.shape_id:
                    yield from _shape_blocks(shape)
            notes = _notes(slide)
            if notes:
                yield f"## Notes\n\n{notes}\n\n"

    return title, blocks(), {"slides": len(slides)}


def _title(slide: Any) -> str:
    shape = slide.shapes.title
    return " ".join(shape.text_frame.text.split()) if shape is not None else ""


def _ordered(shapes: Any) -> list[Any]:
    """Shapes in reading order: by top, then left (an unplaced shape first)."""
    return sorted(shapes, key=lambda s: (s.top or 0, s.left or 0))


def _shape_blocks(shape: Any) -> Iterator[str]:
    """Markdown of one shape (a group: of its shapes, in reading order)."""
    if hasattr(shape, "shapes"):  # a group
        for inner in _ordered(shape.shapes):
            yield from _shape_blocks(inner)
        return
    if getattr(shape, "has_table", False):
        rows = [[" ".join(c.text.split()) for c in row.cells] for row in shape.table.rows]
        lines = table_lines(rows)
        if lines:
            yield "\n".join(lines) + "\n\n"
        return
    if getattr(shape, "has_chart", False):
        chart = shape.chart
        if chart.has_title and chart.chart_title.has_text_frame:
            text = " ".join(chart.chart_title.text_frame.text.split())
            if text:
                yield f"Chart: {text}\n\n"
        return
    if getattr(shape, "has_text_frame", False):
        yield from _text_blocks(shape)


def _text_blocks(shape: Any) -> Iterator[str]:
    bullets = bool(getattr(shape, "is_placeholder", False)) and _is_body(shape)
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if text:
            lines.append(f"{'  ' * paragraph.level}- {text}" if bullets else text)
    if lines:
        yield ("\n".join(lines) if bullets else "\n\n".join(lines)) + "\n\n"


def _is_body(shape: Any) -> bool:
    """A body or content placeholder (its paragraphs are bullets)."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    kind = shape.placeholder_format.type
    return kind in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY,
                    PP_PLACEHOLDER.VERTICAL_OBJECT)


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return ""
    paragraphs = (" ".join(p.text.split()) for p in frame.paragraphs)
    return "\n\n".join(p for p in paragraphs if p)
