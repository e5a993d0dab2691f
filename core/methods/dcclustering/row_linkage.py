"""Vertical linkage: join the feature blocks of the same people across bundles, by keyed id hashes only.

Each site of a clustering project with several feature blocks ships, per row, HMAC-SHA-256(key, id) where
the key derives from the participants' anchor secret (which the analyst never has): the analyst can match
equal ids across sites but cannot reverse or test a guessed id. Here the analyst, given every bundle's
block and hashes:

1. counts, for every distinct hash (a person), how many rows of each block hold it;
2. joins a person when exactly one row of every block holds it; the tuple of bundles that hold the
   person's blocks is its *row group* (the paper's grid row i: institutions (i, 1..d)); groups are
   formed from the data, so bundles may arrive in any order and a site of one block may share people
   with several sites of another block (each combination is its own group);
3. leaves out (and counts, per site) rows whose person is missing from some block ("partial") or is held
   by two sites of the same block ("conflict").

Within a group, people are ordered by the row order of the group's first-block bundle (its shuffled
export order). With a single block every bundle is its own group and no ids are needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError, FormatError


@dataclass
class RowGroup:
    """One row of the data grid: one bundle per block and the aligned rows of the people they share."""

    sites: tuple[int, ...]  # bundle index for each block, in the kit's block order
    rows: np.ndarray  # (n_g, d) int64: row (in bundle order) of each person in each member bundle

    @property
    def n_rows(self) -> int:
        return int(self.rows.shape[0])


@dataclass
class SiteLinkage:
    """What happened to one bundle's rows."""

    rows: int
    joined: int = 0
    partial: int = 0  # left out: the person is missing from at least one other block
    conflicts: int = 0  # left out: the person is also held by another site of the same block
    missing_blocks: dict[str, int] = field(default_factory=dict)  # block → rows of this site missing there
    groups: list[int] = field(default_factory=list)

    def note(self) -> str:
        """One or two plain sentences for the report ("" when every row was joined)."""
        parts = []
        missing = ", ".join(f"'{b}' ({c})" for b, c in self.missing_blocks.items())
        if self.joined == 0 and self.rows:
            why = f"their ids match no row of block {missing}" if self.missing_blocks else "of id conflicts"
            parts.append(f"none of its {self.rows} rows could be joined ({why}); this site was left out of "
                         "the clustering and its rows get no cluster")
        elif self.partial:
            parts.append(f"{self.partial} of its {self.rows} rows have no match in block {missing} and were left "
                         "out (no cluster)")
        if self.conflicts and self.joined:
            parts.append(f"{self.conflicts} row(s) have an id that another site of the same block also holds; "
                         "they were left out (no cluster)")
        return "; ".join(parts)


class VerticalLinkage:
    """Group bundles into row groups by shared id hashes and join their rows (see the module docstring).

    Attributes
    ----------
    groups_ : list[RowGroup], ordered by their bundle tuples.
    sites_ : list[SiteLinkage], one per bundle.
    n_people_ : distinct ids seen; n_joined_ : people joined over every block;
    n_partial_ : people missing from some block; n_conflicts_ : people held twice within a block.
    """

    def fit(self, bundle_blocks: list[str], n_rows: list[int], hashes: list[np.ndarray | None],
            block_names: list[str]) -> VerticalLinkage:
        """``bundle_blocks[b]``, ``n_rows[b]``, ``hashes[b]``: bundle b's block, row count and (n_b, 32) hashes."""
        if not len(bundle_blocks) == len(n_rows) == len(hashes):
            raise ConfigError("one block name, row count and hash array per bundle are needed")
        d = len(block_names)
        index = {b: j for j, b in enumerate(block_names)}
        for b in bundle_blocks:
            if b not in index:
                raise FormatError(f"a bundle holds block '{b}', which the kit does not declare")
        sizes = [int(n) for n in n_rows]
        if d == 1:
            self._single(sizes)
            return self
        for k, h in enumerate(hashes):
            if h is None or h.ndim != 2 or h.shape != (sizes[k], 32) or h.dtype != np.uint8:
                raise FormatError(f"bundle {k + 1} lacks the (rows, 32) uint8 id hashes needed to link blocks")
        keys = np.concatenate([np.ascontiguousarray(h).view(np.dtype((np.void, 32))).ravel() for h in hashes])
        bundle_of = np.repeat(np.arange(len(hashes)), sizes)
        row_of = np.concatenate([np.arange(s) for s in sizes]) if sizes else np.empty(0, np.int64)
        block_of = np.array([index[bundle_blocks[b]] for b in bundle_of], dtype=np.int64)
        _, person = np.unique(keys, return_inverse=True)
        P = int(person.max()) + 1 if person.size else 0
        count = np.zeros((P, d), dtype=np.int64)
        np.add.at(count, (person, block_of), 1)
        complete = (count == 1).all(axis=1)
        conflict = (count > 1).any(axis=1)
        holder = np.full((P, d), -1, dtype=np.int64)
        where = np.full((P, d), -1, dtype=np.int64)
        holder[person, block_of] = bundle_of
        where[person, block_of] = row_of
        self.sites_ = [SiteLinkage(rows=s) for s in sizes]
        # per-site accounting of the rows left out
        row_person = np.split(person, np.cumsum(sizes)[:-1]) if sizes else []
        for b, p in enumerate(row_person):
            site = self.sites_[b]
            site.joined = int(complete[p].sum())
            site.conflicts = int(conflict[p].sum())
            missing = (count[p] == 0) & ~conflict[p][:, None]
            site.partial = int(missing.any(axis=1).sum())
            for j in np.flatnonzero(missing.any(axis=0)):
                site.missing_blocks[block_names[j]] = int(missing[:, j].sum())
        # row groups: the distinct tuples of holders of the complete people
        people = np.flatnonzero(complete)
        self.groups_ = []
        if people.size:
            tuples, inverse = np.unique(holder[people], axis=0, return_inverse=True)
            inverse = inverse.ravel()
            for g, t in enumerate(tuples):
                mine = people[inverse == g]
                rows = where[mine]
                rows = rows[np.argsort(rows[:, 0], kind="stable")]
                self.groups_.append(RowGroup(tuple(int(x) for x in t), rows))
                for b in t:
                    self.sites_[int(b)].groups.append(g)
        self.n_people_ = P
        self.n_joined_ = int(complete.sum())
        self.n_conflicts_ = int(conflict.sum())
        self.n_partial_ = int((~complete & ~conflict).sum())
        return self

    def _single(self, sizes: list[int]) -> None:
        self.groups_ = [RowGroup((b,), np.arange(n, dtype=np.int64)[:, None]) for b, n in enumerate(sizes)]
        self.sites_ = [SiteLinkage(rows=n, joined=n, groups=[b]) for b, n in enumerate(sizes)]
        self.n_people_ = self.n_joined_ = int(sum(sizes))
        self.n_partial_ = self.n_conflicts_ = 0

    def summary(self) -> dict:
        """JSON-able counts for the report."""
        return {"people": self.n_people_, "joined": self.n_joined_, "partial": self.n_partial_,
                "conflicts": self.n_conflicts_, "groups": len(self.groups_)}
