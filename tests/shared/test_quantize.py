"""The int8-kernel MiniLM: built once from the pinned model, cached with a record, verified,
rebuilt when tampered with, and never a hard failure (the pinned model is the fallback)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from graph_flows.shared import embeddings as emb_mod
from graph_flows.shared import quantize


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One build into a private cache (the module's tests share it)."""
    folder = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(quantize.CACHE_ENV, str(folder))
        source, sha = emb_mod.model_file()
        path = quantize.quantized_model(source, sha)
    assert path is not None
    return folder, path


def test_build_writes_model_and_record(built: tuple[Path, Path]) -> None:
    folder, path = built
    assert path.parent == folder and path.is_file()
    record = json.loads(path.with_suffix(".json").read_text())
    _, sha = emb_mod.model_file()
    assert record["source_sha256"] == sha
    assert record["sha256"] == emb_mod.sha256_of(path)
    assert record["recipe"] == quantize.RECIPE
    assert not [p for p in folder.iterdir() if p.name.startswith(".build-")]  # no leftovers


def test_cached_model_is_reused(built: tuple[Path, Path],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder, path = built
    monkeypatch.setenv(quantize.CACHE_ENV, str(folder))

    def no_build(*_: object) -> None:
        raise AssertionError("rebuilt although the cache was valid")

    monkeypatch.setattr(quantize, "_build", no_build)
    assert quantize.quantized_model(*emb_mod.model_file()) == path


def test_tampered_model_is_rebuilt(tmp_path: Path, built: tuple[Path, Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _, good = built
    monkeypatch.setenv(quantize.CACHE_ENV, str(tmp_path))
    bad = tmp_path / good.name
    bad.write_bytes(good.read_bytes() + b"x")
    bad.with_suffix(".json").write_text(good.with_suffix(".json").read_text())
    calls: list[Path] = []

    def copy_build(source: Path, target: Path, workdir: Path) -> None:
        calls.append(source)
        target.write_bytes(good.read_bytes())

    monkeypatch.setattr(quantize, "_build", copy_build)
    path = quantize.quantized_model(*emb_mod.model_file())
    assert calls and path == bad and bad.read_bytes() == good.read_bytes()


def test_unwritable_cache_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(quantize.CACHE_ENV, str(blocker / "models"))
    with caplog.at_level(logging.WARNING, logger=quantize.__name__):
        assert quantize.quantized_model(*emb_mod.model_file()) is None
    assert "using the pinned model" in caplog.text
    emb = emb_mod.MiniLMEmbeddings(int8=True)  # still embeds, on the pinned model
    assert len(emb.embed_query("a sentence")) == 384


def test_int8_vectors_match_pinned_model(built: tuple[Path, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    folder, _ = built
    monkeypatch.setenv(quantize.CACHE_ENV, str(folder))
    texts = ["a cat sits on the mat", "a kitten is sitting on a rug", "stock market crash",
             "The company was founded in 2009 by two former engineers."]
    fast = np.array(emb_mod.MiniLMEmbeddings(int8=True).embed_documents(texts))
    exact = np.array(emb_mod.MiniLMEmbeddings(int8=False).embed_documents(texts))
    assert (fast * exact).sum(axis=1).min() > 0.98
    assert fast[0] @ fast[1] > fast[0] @ fast[2] + 0.3
