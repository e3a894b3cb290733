"""A fitted φ_θ kept and reused: safetensors weights + a JSON config, and a pure-JAX rebuild.

`save_phi(model, folder)` writes `phi.safetensors` (every tensor of the state dict,
float64, no pickle) and `phi.json` (the constructor arguments and a format tag);
`load_phi(folder)` checks both and returns the `PhiMLP`.  `phi_to_jax(model)`
(`neural.phi.jax_copy`, re-exported here) rebuilds the same network as a pure JAX function y (d,) -> φ_θ(y) (n,) from NumPy copies of the
weights, so a φ_θ fitted by `sp-ode fit-phi` can be passed as `phi=` to
`sp_ode.simulate_reduced` (the reduced flow dy/dt = g(φ_θ(y), y), docs/theory.md §3.3;
the error of φ_θ is certified by T4, §3.4).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from neural.phi.jax_copy import phi_to_jax
from neural.phi.model import PhiMLP
from sp_ode.core.errors import Error
from sp_ode.core.files import atomic_write_bytes, write_json

__all__ = ["PHI_FORMAT", "PhiFileError", "save_phi", "load_phi", "phi_to_jax"]

PHI_FORMAT = "sp-ode-phi/1"
WEIGHTS, CONFIG = "phi.safetensors", "phi.json"


class PhiFileError(Error, ValueError):
    """A saved φ_θ that cannot be loaded; the message names the file and what is wrong."""


def _config(model: PhiMLP) -> dict:
    return {"format": PHI_FORMAT, **model.config()}


def save_phi(model: PhiMLP, folder: str | Path, *, metadata: dict | None = None) -> Path:
    """Write φ_θ to `folder` as `phi.safetensors` + `phi.json`; return the folder.

    Parameters
    ----------
    model : PhiMLP
    folder
        A directory (created if missing).
    metadata
        Extra JSON-able facts kept in `phi.json` under "metadata" (system, loss, errors).

    Raises
    ------
    TypeError
        `model` is not a PhiMLP.
    ValueError
        `folder` exists and is a file.
    """
    from safetensors.torch import save

    if not isinstance(model, PhiMLP):
        raise TypeError(f"`model` must be a neural.PhiMLP; got {type(model).__name__}.")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"`folder` {str(folder)!r} is a file; φ_θ is saved as a folder of two files.")
    tensors = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    atomic_write_bytes(folder / WEIGHTS, save(tensors))
    write_json(folder / CONFIG, {**_config(model), "metadata": metadata or {}})
    return folder


def load_phi(path: str | Path) -> PhiMLP:
    """Load a φ_θ written by `save_phi` (or `sp-ode fit-phi --out DIR`): DIR, or DIR/phi.json.

    Returns
    -------
    PhiMLP in eval mode, float64, with the saved weights and input box.

    Raises
    ------
    PhiFileError
        Missing files, a config of another format or with a bad field, a weights file that is
        not safetensors, or a tensor missing or of the wrong shape (named in the message).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = Path(path)
    folder = path.parent if path.name in (CONFIG, WEIGHTS) else path
    cfg_path, w_path = folder / CONFIG, folder / WEIGHTS
    for p in (cfg_path, w_path):
        if not p.is_file():
            raise PhiFileError(f"{p}: missing; a saved φ_θ is a folder holding {CONFIG} and {WEIGHTS}.")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PhiFileError(f"{cfg_path}: not valid JSON ({exc}).") from None
    if not isinstance(cfg, dict) or cfg.get("format") != PHI_FORMAT:
        seen = cfg.get("format") if isinstance(cfg, dict) else type(cfg).__name__
        raise PhiFileError(f"{cfg_path}: field `format` must be {PHI_FORMAT!r}; got {seen!r}.")
    try:
        head = cfg.get("head", "dense")  # files written before the factored head existed are dense
        extra = {}
        if head == "factored":
            # placeholder coords of the saved shape; the real ones are a buffer in the weights file
            extra = {"coords": np.zeros((cfg["n"], len(cfg["sizes"])), dtype=np.int64), "sizes": cfg["sizes"],
                     "rank": cfg["rank"]}
        model = PhiMLP(cfg["d"], cfg["n"], width=cfg["width"], depth=cfg["depth"], lower=cfg["lower"],
                       upper=cfg["upper"], activation=cfg["activation"], head=head, **extra)
    except KeyError as exc:
        raise PhiFileError(f"{cfg_path}: field {exc.args[0]!r} is missing.") from None
    except (TypeError, ValueError) as exc:
        raise PhiFileError(f"{cfg_path}: {exc}") from None
    try:
        tensors = load(w_path.read_bytes())
    except (SafetensorError, ValueError, OSError) as exc:
        raise PhiFileError(f"{w_path}: not a safetensors file ({str(exc).splitlines()[0]}).") from None
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    if missing:
        raise PhiFileError(f"{w_path}: tensor(s) {missing} missing (the config says d={model.d}, n={model.n}, "
                           f"width={model.width}, depth={model.depth}).")
    for key, ref in expected.items():
        if tuple(tensors[key].shape) != tuple(ref.shape):
            raise PhiFileError(f"{w_path}: tensor {key!r} must have shape {tuple(ref.shape)} for this config; "
                               f"got {tuple(tensors[key].shape)}.")
    model.load_state_dict({k: tensors[k].to(ref.dtype) for k, ref in expected.items()})
    return model.eval()
