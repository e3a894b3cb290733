"""The bases of everything sp_ode and neural raise or warn: `except sp_ode.Error` catches them all.

Every library exception subclasses `Error` *and* the built-in it has always subclassed
(`class NetworkError(Error, ValueError)`), so a caller's `except ValueError` keeps working
and `except sp_ode.Error` tells the library's refusals from a bug's.  Every library warning
subclasses `SpOdeWarning`, itself a `UserWarning`, so one filter silences or escalates them
all: `warnings.simplefilter("error", sp_ode.SpOdeWarning)`.  docs/api/errors.md lists each
class with its module, its built-in base and when it is raised (tests/core/test_errors.py
keeps that list complete).
"""
from __future__ import annotations


class Error(Exception):
    """The base of every exception sp_ode and neural raise; each also keeps its built-in base (ValueError, ...)."""


class SpOdeWarning(UserWarning):
    """The base of every warning sp_ode and neural issue."""
