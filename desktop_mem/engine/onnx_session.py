"""One way to open an ONNX model on the CPU, shared by the embedder and the reranker."""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort


def cpu_session(path: Path, threads: int) -> ort.InferenceSession:
    """A sequential CPU session with `threads` intra-op threads.

    On two cores the embedder and reranker compete with a local LLM, so the thread count is a
    setting. Raises RuntimeError with onnxruntime's reason (it raises untyped errors itself).
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own exception types are not exported
        raise RuntimeError(str(exc)) from exc
