"""`make test` (--dist loadgroup) sends the tests of one ``xdist_group`` to one worker (tests/conftest.py).

pytest-xdist's LoadGroupScheduling takes a test's unit of work from the ``@group`` suffix of its id; an id
without one is a unit of its own, so a group's module fixture is then built on every worker that draws one
of its tests.  Under pytest 9 xdist's own suffix is not read (issue 37): these checks fail without the
conftest hook, and pass alone (no xdist: no suffix, nothing to group).
"""
from __future__ import annotations

import pytest
from xdist.scheduler import LoadGroupScheduling

pytestmark = pytest.mark.xdist_group("test_xdist_groups")


def _unit(nodeid: str) -> str:
    return LoadGroupScheduling._split_scope(None, nodeid)  # type: ignore[arg-type]  # reads only `nodeid`


def test_a_grouped_test_reaches_the_scheduler_as_its_group(request):
    nodeid = request.node.nodeid
    if getattr(request.config.option, "loadgroup", False):   # a worker of `make test`
        assert nodeid.endswith("@test_xdist_groups"), nodeid
        assert _unit(nodeid) == "test_xdist_groups"
    else:                                                    # one process: ids as written
        assert "@" not in nodeid, nodeid


def test_an_id_without_its_group_is_a_unit_of_its_own():
    # the negative control: what the scheduler saw before the hook, one unit per test
    nodeid = "tests/docs/test_site.py::test_built_site_has_no_raw_markup_and_every_page_in_the_menu"
    assert _unit(nodeid) == nodeid
    assert _unit(nodeid + "@docs_site") == "docs_site"
