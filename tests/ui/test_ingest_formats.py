"""A folder of Word, PowerPoint, Excel and e-mail files, good and bad, through `krag ingest`
and the indexing graph's ``paths``; questions about their content answered without an LLM,
citing the passage of the slide, sheet row or section."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from graph_flows import query_flow
from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import use_resources
from storage import KnowledgeStore
from tests import format_fixtures as ff
from tests.procs import run_cli as cli
from tests.ui.test_ingest_cli import _isolated, resources  # noqa: F401 - autouse fixture
from tests.ui.test_ui_apptest import seeded_url  # noqa: F401 - fixture

GOOD = {"policy.docx", "review.pptx", "budget.xlsx", "mail.eml"}


def mixed_folder(folder: Path, tmp: Path) -> Path:
    folder.mkdir()
    ff.write_docx(folder / "policy.docx")
    ff.write_pptx(folder / "review.pptx")
    ff.write_xlsx(folder / "budget.xlsx")
    ff.write_eml(folder / "mail.eml")
    (folder / "renamed.docx").write_bytes(b"%PDF-1.4\n%%EOF\n")
    ff.write_zip_bomb(folder / "bomb.xlsx", unpacked_mb=16)
    ff.write_encrypted_docx(folder / "locked.docx", tmp)
    (folder / "zero.pptx").write_bytes(b"")
    ff.write_eml(folder / "attachments.eml", body=False, attachment=True)
    return folder


def stored_uris(store: KnowledgeStore) -> dict[str, int]:
    """Chunks stored per document file name."""
    with store.connect() as conn:
        found = conn.execute(text(
            "SELECT d.uri, count(c.id) FROM documents d LEFT JOIN chunks c "
            "ON c.document_id = d.id GROUP BY d.uri")).all()
    return {Path(uri).name: n for uri, n in found}


def cited(out: dict[str, Any]) -> list[str]:
    """Texts of the passages the answer cites ([P1], [P2] ...)."""
    labels = set(re.findall(r"\[(P\d+)\]", out["answer"]))
    return [p["text"] for p in out.get("passages") or [] if p.get("label") in labels]


def test_a_folder_of_office_files_ingests_and_answers_with_slide_and_row(
        capsys: pytest.CaptureFixture[str], store: KnowledgeStore, tmp_path: Path) -> None:
    folder = mixed_folder(tmp_path / "team", tmp_path)
    with use_resources(resources(store, max_upload_mb=1)):
        code, out, err = cli(capsys, "ingest", str(folder), "--json")
        assert code == 0, err
        report = json.loads(out)
        slide = query_flow.invoke({"query": "Who leads the beta in Porto?"})
        row = query_flow.invoke({"query": "Who approved the budget?"})
        section = query_flow.invoke({"query": "What is the daily allowance in Oslo?"})
    assert report["documents"]["new"] == 4 and report["documents"]["skipped"] == 5
    reasons = {Path(f["uri"]).name: f["reason"] for f in report["failures"]}
    assert reasons["renamed.docx"] == "this is a PDF, not a Word file; rename it to .pdf"
    assert "(a zip bomb?)" in reasons["bomb.xlsx"]
    assert reasons["locked.docx"].startswith("password-protected Word file")
    assert reasons["zero.pptx"] == "empty file; nothing to index"
    assert reasons["attachments.eml"].startswith("e-mail with no text, only attachments")
    chunks = stored_uris(store)
    assert set(chunks) == GOOD and all(chunks.values())  # nothing of a bad file stored
    assert any("# Slide 2: Launch Plan" in t and "Marta Ribeiro" in t for t in cited(slide)), \
        slide["answer"]
    assert any(t.startswith("# Sheet: Notes\n\n- row 1: The budget was approved by Ingrid")
               for t in cited(row)), row["answer"]
    assert any(t.startswith("# Travel Policy\n## Approvals") and "Oslo; Daily allowance: 140 EUR"
               in t for t in cited(section)), section["answer"]


def test_the_indexing_graph_paths_input_reads_the_new_formats(
        store: KnowledgeStore, tmp_path: Path) -> None:
    paths = [str(ff.write_epub(tmp_path / "tales.epub")), str(ff.write_odt(tmp_path / "g.odt"))]
    (tmp_path / "rooms.csv").write_text("Room,Floor\nB12,2\n", encoding="utf-8")
    paths.append(str(tmp_path / "rooms.csv"))
    with use_resources(resources(store)):
        out = runner.ingest({"paths": paths, "source": "formats"}, IndexingContext())
        answer = query_flow.invoke({"query": "Who lit the lamp every night?"})
    assert out["documents"]["new"] == 3 and not out["failures"]
    assert any("# The Lighthouse" in t and "Elsa Varga" in t for t in cited(answer)), \
        answer["answer"]


@pytest.mark.usefixtures("seeded_url")
def test_the_upload_accepts_the_new_types_and_ingests_a_word_file(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    from graph_flows.shared.settings import load_settings
    from tests.ui.test_ui_apptest import APP, TIMEOUT
    from ui.web import backend

    settings = load_settings()
    for name in ("a.docx", "b.PPTX", "c.xlsx", "d.csv", "e.epub", "f.eml", "g.odt", "h.rtf",
                 "i.json", "j.jsonl"):
        assert backend.check_upload(name, 100, settings) is None, name
    docx = ff.write_docx(tmp_path / "policy.docx").read_bytes()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.sidebar.get("file_uploader")[0].set_value([
        ("policy.docx", docx, "application/octet-stream"),
        ("renamed.docx", b"%PDF-1.4\n%%EOF\n", "application/octet-stream")]).run()
    at.sidebar.button[0].click().run()
    assert not at.exception, at.exception
    (line,) = [w.value.replace("\\", "") for w in at.sidebar.warning]
    assert line == ("1 ingested, 1 refused: renamed.docx: this is a PDF, not a Word file; "
                    "rename it to .pdf"), line
    at.chat_input[0].set_value("What is the daily allowance in Oslo?").run(timeout=TIMEOUT)
    assert not at.exception, at.exception
    (panel,) = [e for e in at.chat_message[-1].expander if e.label.startswith("Sources")]
    sources = "\n".join(m.value for m in panel.markdown).replace("\\", "")
    assert "policy.docx" in sources and "Oslo" in sources, sources
