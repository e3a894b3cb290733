"""The folder of a resumable sweep: its manifest, one `.npz` per finished chunk, the validation, timings.

Layout: `manifest.json` (the fingerprint, the options, the chunks done, the cost model's Decision),
`chunk_NNNNNN.npz` (numbers only — no clock: `npz_bytes` writes the same bytes for the same arrays),
`validation.npz`, and `timings.json` (wall-clock seconds per chunk, a record never read to decide).
Every file is written atomically (`sp_ode.core.files.atomic_write_bytes`: temp, fsync, rename), so a
sweep killed at any moment — `kill -9` included — leaves at most temporary files beside complete
ones (`is_orphan`), which reopening the folder removes.  `sp-ode sweep --out D` keeps the sweep in
`D/chunks`; `sweep_folder` finds either layout, so the library and the command resume each other's
folders (docs/guide/sweeps.md).
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from sp_ode.core.errors import Error
from sp_ode.core.files import atomic_write_bytes, write_json
from sp_ode.sweeps._fingerprint import describe_changes, fingerprint_of

MANIFEST = "manifest.json"
VALIDATION = "validation.npz"
TIMINGS = "timings.json"      # wall-clock seconds per chunk: reported beside the results, never read to decide
CHUNKS = "chunks"             # the sub-folder `sp-ode sweep --out D` keeps the sweep in (`sweep_folder`)
FORMAT = 3             # 3: the fingerprint in named parts (`sp_ode.sweeps._fingerprint.sweep_parts`)


class SweepResumeError(Error, ValueError):
    """`out` holds a different sweep (its manifest fingerprint does not match this one)."""


def chunk_path(out: Path, index: int) -> Path:
    return out / f"chunk_{index:06d}.npz"


CHUNK_KEYS = ("points", "y", "path", "estimate", "status", "reason", "x0")


def npz_bytes(arrays: dict) -> bytes:
    """The bytes of an `.npz` of `arrays` (as `np.savez`, readable by `np.load`) that depend on the arrays
    alone: `np.savez` stamps each member with the clock, so the same chunk written twice differed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


def write_chunk(out: Path, res: dict) -> None:
    """The chunk's numbers only: a resumed sweep's chunk files are byte for byte an uninterrupted one's (its
    timings go to `TIMINGS` beside them, a record never read back to decide anything)."""
    atomic_write_bytes(chunk_path(out, res["index"]), npz_bytes({k: res[k] for k in CHUNK_KEYS}))
    timings = out / TIMINGS
    try:
        record = json.loads(timings.read_text()) if timings.is_file() else {}
    except ValueError:           # a record torn by a kill: timings are reported, never needed
        record = {}
    record[str(int(res["index"]))] = {"seconds": res.get("seconds", {}), "compile_seconds": res.get("compile_seconds", {})}
    write_json(timings, record)


def read_chunk(out: Path, index: int) -> dict | None:
    p = chunk_path(out, index)
    if not p.is_file():
        return None
    with np.load(p) as z:
        res = {k: z[k] for k in CHUNK_KEYS}
    res.update(index=index)
    return res


def sweep_folder(out) -> Path:
    """The folder that holds (or will hold) a sweep's manifest and chunks, given `out`: `out` itself, or
    `out/chunks` where that holds a manifest and `out` does not — the layout `sp-ode sweep --out` writes,
    so that the library resumes a folder the command made, and the command one the library made."""
    out = Path(out)
    if not (out / MANIFEST).is_file() and (out / CHUNKS / MANIFEST).is_file():
        return out / CHUNKS
    return out


def is_orphan(path: Path) -> bool:
    """A temporary file `sp_ode.core.files.atomic_write_bytes` left behind when its writer was killed
    (".NAME.XXXX.tmp" for one of a sweep's files): never read, removed when the sweep reopens the folder."""
    name = path.name
    return name.startswith(".") and name.endswith(".tmp") and any(
        name.startswith(f".{stem}") for stem in (MANIFEST, VALIDATION, TIMINGS, "chunk_", "report.json", "result.npz"))


def remove_orphans(out: Path) -> list[Path]:
    """Delete the orphaned temporary files in `out` (`is_orphan`); returns them."""
    found = [p for p in out.iterdir() if p.is_file() and is_orphan(p)] if out.is_dir() else []
    for p in found:
        p.unlink(missing_ok=True)
    return found


def open_out(out, parts: dict, meta: dict, options: dict) -> tuple[Path, dict]:
    """(folder, manifest): the folder's sweep resumed when its fingerprint equals that of `parts`
    (`sweep_parts`), else SweepResumeError naming the parts that changed; a new manifest otherwise.
    `options` (a subset of `meta`): compared by value in the refusal."""
    fingerprint = fingerprint_of(parts)
    out = sweep_folder(out)
    # a sweep killed at any moment (kill -9 included) leaves at most temporary files beside its complete
    # ones: every file is written atomically (temp, fsync, rename), so those are all a rerun must discard
    remove_orphans(out)
    manifest_path = out / MANIFEST
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("fingerprint") != fingerprint:
            old = manifest.get("fingerprint_parts")
            what = (describe_changes(old, parts, {k: manifest.get(k) for k in options}, options)
                    if isinstance(old, dict) else "")
            what = what or (f"it was made by another sp-ode version (format {manifest.get('format')!r}, this one "
                            f"{FORMAT}): the model, its parameters or code, or the sweep's inputs may have changed")
            raise SweepResumeError(f"`out` {str(out)!r} holds a different sweep — since the earlier run, {what}: "
                                   "pass a new folder, or delete it to start over.")
        return out, manifest
    manifest = {"format": FORMAT, "fingerprint": fingerprint, "fingerprint_parts": dict(parts), **meta, "done": []}
    write_json(manifest_path, manifest)
    return out, manifest


def manifest_chunk_size(out) -> int | None:
    if out is None:
        return None
    p = sweep_folder(out) / MANIFEST
    if not p.is_file():
        return None
    try:
        return int(json.loads(p.read_text()).get("chunk_size"))
    except (ValueError, TypeError):
        return None
