"""One door: every object an entry point accepts, turned into the system it stands for.

`simulate`, `simulate_reduced`, `verify`, `sweep`, `fit_phi` and each command of the command
line accept the same objects, and all of them go through `as_system` (objects) or
`load_system` (the command line's strings):

- a [`FastSlowSystem`][sp_ode.systems.system.FastSlowSystem] (a `MasterEquationSystem` too) or a
  [`NetworkSystem`][sp_ode.systems.network.NetworkSystem]: itself;
- a [`CatalogueEntry`][sp_ode.systems.catalogue.CatalogueEntry], or a user's entry (`EntryLike`: any
  object with `.system`, `.t_span`, `.x0`, `.y0`): its system (the entry's defaults stay on the entry for
  the callers that use them);
- a [`NetworkModel`][sp_ode.networks.models.NetworkModel]: the `NetworkSystem` on its projection with
  the model's own ε (`NetworkModel.eps`), so one catalogue model has one ε at every door;
- strings: a catalogue name, `family:NAME` (a generator family as a master-equation entry),
  `network:NAME` (a catalogue network) or `path/file.py:OBJECT` (a factory there is called
  with no arguments).

The decision is by type (`isinstance`), never by the attributes an object happens to have.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sp_ode.core.files import load_object
from sp_ode.networks.models import NETWORK_MODELS, NetworkModel
from sp_ode.systems.catalogue import SYSTEMS, CatalogueEntry, get_system, master_equation_entry
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.system import FastSlowSystem

__all__ = ["as_system", "load_system", "EntryLike", "SystemLike", "SYSTEM_TYPES", "NETWORK_PREFIX", "FAMILY_PREFIX",
           "network_system"]

NETWORK_PREFIX = "network:"
FAMILY_PREFIX = "family:"


@runtime_checkable
class EntryLike(Protocol):
    """A user's entry: a system with its default horizon and starts, e.g. a `types.SimpleNamespace` in a model
    file (docs/guide/your_own_model.md), optionally with a closed-form `.phi`.  A `CatalogueEntry` is one.
    Declared here, once, so that the entry points recognise it by this protocol, not each by its attributes."""

    system: Any
    t_span: Any
    x0: Any
    y0: Any


# What `as_system` accepts, for isinstance checks at the doors that take a ready object as well.
SYSTEM_TYPES = (FastSlowSystem, NetworkSystem, CatalogueEntry, NetworkModel, EntryLike)
SystemLike = FastSlowSystem | NetworkSystem | CatalogueEntry | NetworkModel | EntryLike
"""The objects `as_system` accepts, for annotations (a `MasterEquationSystem` is a `FastSlowSystem`)."""


def network_system(model: NetworkModel, *, eps: float | None = None) -> NetworkSystem:
    """The `NetworkSystem` of a catalogue network model, at the model's ε unless `eps` is given."""
    return NetworkSystem(model.network, model.space(), model.slow, eps=model.eps if eps is None else eps,
                         name=model.name)


def as_system(obj: SystemLike, *, name: str = "system") -> FastSlowSystem | NetworkSystem:
    """The system `obj` stands for (see the module docstring); a TypeError naming `name` otherwise."""
    if isinstance(obj, (FastSlowSystem, NetworkSystem)):
        return obj
    if isinstance(obj, NetworkModel):
        return network_system(obj)
    if isinstance(obj, EntryLike) and isinstance(obj.system, (FastSlowSystem, NetworkSystem)):
        return obj.system                  # a catalogue entry, or a user's entry
    raise TypeError(f"`{name}` must be a FastSlowSystem, a MasterEquationSystem, a NetworkSystem, a catalogue entry "
                    "(sp_ode.get_system; or any object with .system, .t_span, .x0, .y0), or a NetworkModel "
                    f"(sp_ode.get_network_model); got {type(obj).__name__}.")


def load_system(spec: str, *, name: str = "system", base: Path | None = None) -> SystemLike:
    """The object a command-line string names: a `CatalogueEntry`, a `NetworkModel` or a user's object.

    `spec` is a catalogue name, `family:NAME`, `network:NAME` or `path/file.py:OBJECT` (a relative
    file is looked for in `base` first, e.g. beside a config file).  A factory function in a file is called
    with no arguments.  The result is one of `SYSTEM_TYPES` (a ValueError naming `name` otherwise); pass it
    to `as_system` for the system itself.
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"`{name}` must be a catalogue name, 'family:NAME', 'network:NAME' or path/file.py:OBJECT; "
                         f"got {spec!r}.")
    if spec.startswith(FAMILY_PREFIX):
        family = spec[len(FAMILY_PREFIX):]
        return master_equation_entry(family, f"me_{family}")
    if spec.startswith(NETWORK_PREFIX):
        key = spec[len(NETWORK_PREFIX):]
        if key not in NETWORK_MODELS:
            raise ValueError(f"`{name}` {spec!r}: unknown network model; use one of "
                             f"{tuple(NETWORK_PREFIX + k for k in NETWORK_MODELS)}.")
        return NETWORK_MODELS[key]()
    if ":" in spec or spec.endswith(".py"):
        file, _, attr = spec.rpartition(":")
        if base is not None and file and not Path(file).is_absolute() and (base / file).is_file():
            spec = f"{base / file}:{attr}"
        obj = load_object(spec, name=name)
        if callable(obj) and not isinstance(obj, SYSTEM_TYPES):
            obj = obj()
        if not isinstance(obj, SYSTEM_TYPES):
            raise ValueError(f"`{name}` {spec!r} must name a FastSlowSystem, a catalogue entry, a NetworkSystem or "
                             f"a NetworkModel (or a function returning one); got {type(obj).__name__}.")
        return obj
    if spec in SYSTEMS:
        return get_system(spec)
    raise ValueError(f"`{name}` must be one of {tuple(SYSTEMS)}, 'family:NAME', 'network:NAME' or "
                     f"path/file.py:OBJECT; got {spec!r}.")
