"""Kernels on a named tuple of arrays (`wmtsim.core.node_arrays.rows_type`), for any
fields: row ``i`` of every array (`_row_of`) and a copy of every array (`_copies`).

numba builds a tuple only from items written out one by one, so these are written as
numba overloads that write them out at compile time, one item per field of the tuple
type they are called with: a per-node array added to `wmtsim.core.node_arrays` reaches
every kernel without a hand-written constructor (pynndescent walks its ``FlatTree`` the
same way, by field).
"""

# The functions are unannotated: numba checks that an overload's signature, annotations
# included, is its implementation's.
from __future__ import annotations

from numba.extending import overload


def _items_at(rows, i):
    """``(rows[0][i], rows[1][i], ...)``: a plain tuple (kernels only)."""
    raise NotImplementedError("a numba kernel helper: call it from a kernel")


@overload(_items_at)
def _items_at_impl(rows, i):
    if len(rows) == 0:
        return lambda rows, i: ()
    # The first item, then the rest: a tuple one field shorter, resolved the same way.
    # (Concatenation: numba builds ``(x, *rest)`` through a list, which must be uniform.)
    return lambda rows, i: (rows[0][i],) + _items_at(rows[1:], i)  # noqa: RUF005


def _copied(rows):
    """``(rows[0].copy(), rows[1].copy(), ...)``: a plain tuple (kernels only)."""
    raise NotImplementedError("a numba kernel helper: call it from a kernel")


@overload(_copied)
def _copied_impl(rows):
    if len(rows) == 0:
        return lambda rows: ()
    return lambda rows: (rows[0].copy(),) + _copied(rows[1:])  # noqa: RUF005


def _row_of(rows, i):
    """Row ``i`` of every array of the named tuple ``rows`` (views), as the same named
    tuple type: one trajectory's `ForestRows` or `WorldRows` of a batch's."""
    raise NotImplementedError("a numba kernel helper: call it from a kernel")


@overload(_row_of)
def _row_of_impl(rows, i):
    cls = rows.instance_class
    return lambda rows, i: cls(*_items_at(rows, i))


def _copies(rows):
    """A copy of every array of the named tuple ``rows``, as the same named tuple type."""
    raise NotImplementedError("a numba kernel helper: call it from a kernel")


@overload(_copies)
def _copies_impl(rows):
    cls = rows.instance_class
    return lambda rows: cls(*_copied(rows))
