"""Training checkpoints: atomic writes, `weights_only` loads, exact resume.

A checkpoint holds everything that determines the rest of a run: model and
optimiser state, the step and token counters, and every random state that the
training loop consumes — torch's (dropout), NumPy's, Python's and the data
generator's (which windows are drawn next), one entry per DDP rank.  Restoring
all of them makes a resumed run reproduce an uninterrupted one.

Only tensors, numbers, strings, None, lists and dicts are stored, so the file
loads with `torch.load(..., weights_only=True)` (no arbitrary pickles).  Files
are written through `sp_ode.core.files.atomic_write_bytes` (temp file, fsync,
rename): a run killed mid-write leaves the previous checkpoint intact, plus a
`.checkpoint.pt.*.tmp` file that `clean_stale_temps` removes when the next
run starts.  `check_state` checks a loaded checkpoint against the model before
anything is restored, so a wrong-shaped weight or an empty RNG state is one
[`CheckpointError`][neural.lm.checkpoint.CheckpointError] naming the file and the field.
"""
from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sp_ode.core.errors import Error
from sp_ode.core.files import atomic_write_bytes

__all__ = ["CheckpointError", "CheckpointMismatchError", "FORMAT", "save_checkpoint", "load_checkpoint",
           "check_compatible", "check_state", "clean_stale_temps", "capture_rng", "restore_rng"]

FORMAT = "sp-ode-train/1"

REQUIRED_KEYS = ("format", "model_config", "train_config", "data", "world_size", "step", "tokens",
                 "model", "optimizer", "rng")


class CheckpointError(Error, ValueError):
    """A checkpoint that cannot be read: missing, truncated, corrupted or of an unknown format."""


class CheckpointMismatchError(CheckpointError):
    """A readable checkpoint whose model/training/data settings differ from the run resuming it."""


# --------------------------------------------------------------------------- RNG states


def capture_rng(data_generator: torch.Generator) -> dict:
    """This process's random states, as tensors and primitive types."""
    keys, pos, has_gauss, cached = np.random.get_state()[1:]
    version, py_state, gauss = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {"keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},
        "python": {"version": int(version), "state": list(py_state), "gauss": gauss},
        "data": data_generator.get_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict, data_generator: torch.Generator) -> None:
    """Inverse of `capture_rng`."""
    torch.set_rng_state(state["torch"])
    np_state = state["numpy"]
    np.random.set_state(("MT19937", np_state["keys"].numpy().astype(np.uint32), np_state["pos"],
                         np_state["has_gauss"], np_state["cached"]))
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    data_generator.set_state(state["data"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# --------------------------------------------------------------------------- files


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> Path:
    """Write `state` (see `REQUIRED_KEYS`) atomically with `torch.save`."""
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise ValueError(f"checkpoint `state` is missing keys {missing}.")
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return atomic_write_bytes(path, buffer.getvalue())


def load_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict:
    """Read a checkpoint with `weights_only=True`.

    Raises
    ------
    CheckpointError
        If the file does not exist, cannot be unpickled (truncated, corrupted,
        not a torch file, or holding objects other than tensors and primitive
        types), or lacks the keys and format tag this trainer writes.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint to resume at {str(path)!r}; run without --resume to start afresh.")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # zip/pickle/EOF errors all mean the same to the user
        raise CheckpointError(
            f"checkpoint {str(path)!r} is unreadable (corrupted or truncated?): {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}. Delete it to start afresh."
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        seen = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"checkpoint {str(path)!r} has format {seen!r}; expected {FORMAT!r}.")
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} lacks keys {missing} (corrupted or from another tool).")
    return state


RNG_KEYS = ("torch", "numpy", "python", "data")


def check_state(state: dict, model: torch.nn.Module, *, world_size: int, path: str | Path = "checkpoint") -> None:
    """Check a loaded checkpoint's weights and RNG states against `model` before restoring them.

    Raises
    ------
    CheckpointError
        A weight missing, unexpected or of the wrong shape (named, with both shapes); an RNG
        state that is empty or lacks one of `RNG_KEYS`; a step that is not a non-negative int.
    """
    where = f"checkpoint {str(path)!r}"
    weights = state["model"]
    if not isinstance(weights, dict):
        raise CheckpointError(f"{where}: field `model` must be a dict of tensors; got {type(weights).__name__}.")
    expected = model.state_dict()
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{where}: field `model` does not match the model: missing {missing[:3]}, "
                              f"unexpected {extra[:3]}.")
    for key, ref in expected.items():
        got = weights[key]
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(ref.shape):
            seen = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise CheckpointError(f"{where}: weight `model.{key}` must have shape {tuple(ref.shape)}; got {seen}.")
    rng = state["rng"]
    if not isinstance(rng, list) or len(rng) != world_size:
        seen = len(rng) if isinstance(rng, (list, dict)) else type(rng).__name__
        raise CheckpointError(f"{where}: field `rng` must hold one RNG state per rank ({world_size}); got {seen}.")
    for r, entry in enumerate(rng):
        lacking = [k for k in RNG_KEYS if not isinstance(entry, dict) or k not in entry]
        if lacking:
            raise CheckpointError(f"{where}: field `rng[{r}]` is empty or lacks {lacking}; "
                                  "the run cannot be resumed exactly (start afresh with --overwrite).")
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CheckpointError(f"{where}: field `step` must be an integer >= 0; got {step!r}.")


def clean_stale_temps(folder: str | Path) -> list[Path]:
    """Remove temp files a killed atomic write left in `folder` (`.NAME.*.tmp`); return them."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    stale = sorted(p for p in folder.glob(".*.tmp") if p.is_file())
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


# Settings that may change between a run and its resumption: they do not alter the trajectory
# (device/compile change float rounding on GPUs but not the algorithm; evaluation is read-only).
RESUMABLE_CHANGES = frozenset({"device", "compile", "eval_every", "eval_windows", "checkpoint_every"})
# Data descriptor keys added after checkpoints were first written (the bytes' SHA-256): a checkpoint
# without one is compared on name and sizes only; one with it must match the data's digest.
ADDED_DATA_KEYS = frozenset({"sha256"})


def check_compatible(state: dict, *, model_config: dict, train_config: dict, data: dict, world_size: int,
                     path: str | Path = "checkpoint", extend: bool = False) -> None:
    """Raise [`CheckpointMismatchError`][neural.lm.checkpoint.CheckpointMismatchError] naming every field that differs.

    The model config and data must match exactly; the training config may differ
    only in `RESUMABLE_CHANGES` (and, with `extend` — a finished run given a larger
    budget — in `tokens`/`steps`); the DDP world size must match (each rank's data
    stream is part of the saved state).
    """
    diffs = []
    for section, mine in (("model", model_config), ("data", data)):
        theirs = state["model_config" if section == "model" else "data"]
        for key in sorted(set(mine) | set(theirs)):
            if section == "data" and key in ADDED_DATA_KEYS and key not in theirs:
                continue  # a checkpoint written before the key existed: compared on the rest
            if mine.get(key) != theirs.get(key):
                diffs.append(f"{section}.{key}: checkpoint {theirs.get(key)!r}, now {mine.get(key)!r}")
    theirs = state["train_config"]
    for key in sorted(set(train_config) | set(theirs)):
        allowed = RESUMABLE_CHANGES | ({"tokens", "steps"} if extend else set())
        if key not in allowed and train_config.get(key) != theirs.get(key):
            diffs.append(f"train.{key}: checkpoint {theirs.get(key)!r}, now {train_config.get(key)!r}")
    if state["world_size"] != world_size:
        diffs.append(f"world_size: checkpoint {state['world_size']}, now {world_size}")
    if diffs:
        raise CheckpointMismatchError(
            f"checkpoint {str(path)!r} does not match this run's settings: " + "; ".join(diffs)
            + ". Resume with the original settings (a larger --tokens is accepted once the run has finished), "
            "or start afresh with --overwrite."
        )
