"""Model configuration of the fast–slow attention LM (docs/theory.md §4).

A frozen dataclass; presets are plain functions; `with_overrides` applies
checked `key=value` strings (the CLI's `--set`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

ARMS = ("dense", "coupled", "frozen")

Arm = Literal["dense", "coupled", "frozen"]


class ConfigDict:
    """`to_dict`/`from_dict` for the frozen config dataclasses (unknown keys are named in the error)."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s) {unknown}; valid: {sorted(names)}.")
        return cls(**data)


@dataclass(frozen=True)
class ModelConfig(ConfigDict):
    """Shape and ablation arm of [`neural.FastSlowLM`][neural.lm.model.FastSlowLM].

    Attributes
    ----------
    vocab_size : V
        256 for byte-level tokens.
    seq_len : T
        The context length (fast path attends over T tokens).
    pool : P
        The pooling block size; ε = 1/P.  The slow path attends over T/P pooled tokens.
    n_layer, n_head, d_model : depth
        Heads, width.
    arm : "dense" (no slow path), "coupled" (slow path + gate trained),
        "frozen" (slow-path weights frozen at init, gate trained).
    window
        None for full causal fast attention, else a sliding window W ≥ 1.
    dropout
        Dropout probability in [0, 1).
    """

    vocab_size: int = 256
    seq_len: int = 256
    pool: int = 16
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    arm: Arm = "coupled"
    window: int | None = None
    dropout: float = 0.0
    mlp_ratio: int = 4
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "pool", "n_layer", "n_head", "d_model", "mlp_ratio"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"`{name}` must be a positive integer; got {type(value).__name__} {value!r}.")
            if value < 1:
                raise ValueError(f"`{name}` must be a positive integer; got {value!r}.")
        if self.arm not in ARMS:
            raise ValueError(f"`arm` must be one of {ARMS}; got {self.arm!r}.")
        if self.seq_len % self.pool != 0:
            raise ValueError(
                f"`seq_len` (T={self.seq_len}) must be divisible by `pool` (P={self.pool}) so that the "
                f"slow path sees whole blocks; use T = {self.seq_len // self.pool * self.pool or self.pool} or change P."
            )
        if self.d_model % self.n_head != 0:
            raise ValueError(f"`d_model` ({self.d_model}) must be divisible by `n_head` ({self.n_head}).")
        if self.window is not None and (isinstance(self.window, bool) or not isinstance(self.window, int)):
            raise TypeError(f"`window` must be None or a positive integer; got {type(self.window).__name__}.")
        if self.window is not None and self.window < 1:
            raise ValueError(f"`window` must be None or a positive integer; got {self.window!r}.")
        if not (isinstance(self.dropout, (int, float)) and 0.0 <= self.dropout < 1.0):
            raise ValueError(f"`dropout` must be in [0, 1); got {self.dropout!r}.")

    @property
    def n_blocks(self) -> int:
        """T/P, the number of slow (pooled) tokens."""
        return self.seq_len // self.pool

    def with_overrides(self, overrides: list[str] | dict) -> ModelConfig:
        """Apply `["key=value", ...]` (or a dict), each key checked against the fields."""
        if isinstance(overrides, dict):
            return dataclasses.replace(self, **overrides)
        fields = {f.name: f for f in dataclasses.fields(self)}
        changes = {}
        for item in overrides:
            key, sep, raw = item.partition("=")
            if not sep or key not in fields:
                raise ValueError(f"`--set` items must be key=value with key in {sorted(fields)}; got {item!r}.")
            current = getattr(self, key)
            try:
                if raw.lower() == "none":
                    value = None
                elif isinstance(current, bool):
                    value = raw.lower() in ("1", "true", "yes")
                elif isinstance(current, int) or key == "window":
                    value = int(raw)
                elif isinstance(current, float):
                    value = float(raw)
                else:
                    value = raw
            except ValueError:
                raise ValueError(f"`--set {key}` must be a {type(current).__name__}; got {raw!r}.") from None
            changes[key] = value
        return dataclasses.replace(self, **changes)


def tiny(**kw) -> ModelConfig:
    """A model that trains in seconds on a CPU (tests, smoke runs)."""
    return ModelConfig(**{**dict(seq_len=64, pool=8, n_layer=2, n_head=2, d_model=32), **kw})


def small(**kw) -> ModelConfig:
    """nanoGPT's character-level CPU recipe size (4 layers, 4 heads, width 128), context 256."""
    return ModelConfig(**{**dict(seq_len=256, pool=16, n_layer=4, n_head=4, d_model=128), **kw})


PRESETS = {"tiny": tiny, "small": small}
