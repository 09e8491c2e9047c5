"""The weighted parts of a candidate's score (pure arithmetic over what
:mod:`sealmem.client.recall.search` read): what each part means is in
:mod:`sealmem.client.recall.ranking`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .ranking import DAY_MS, RankingWeights, Span, mask_share
from .sql import Row

__all__ = ["Scorer"]


class Scorer:
    """The weighted parts of a candidate's score, in the order of ``_NAMES``
    (see :mod:`sealmem.client.recall.ranking` for what each one means)."""

    def __init__(
        self,
        rows: dict[int, Row],
        bm25: dict[int, float],
        near: dict[int, dict[int, int]],
        masks: dict[int, int],
        shares: list[float],
        entities: int,
        spans: Sequence[Span],
        now_ms: int,
        weights: RankingWeights,
    ) -> None:
        self.rows, self.bm25, self.near, self.masks = rows, bm25, near, masks
        self.shares, self.spans, self.now_ms, self.w = shares, spans, now_ms, weights
        self.entities, self.n_entities = entities, entities.bit_count()
        self.best = max(bm25.values()) or 1.0
        self.decay = math.log(2) / (weights.recency_half_life_days * DAY_MS)
        self._share: dict[int, float] = {}
        self.partial: dict[int, int] = {}  # query words held only as a prefix

    def share(self, mask: int) -> float:
        value = self._share.get(mask)
        if value is None:
            value = self._share[mask] = mask_share(self.shares, mask)
        return value

    def parts(self, rowid: int) -> tuple[float, ...]:
        w, row, mask = self.w, self.rows[rowid], self.masks[rowid]
        lexical = w.bm25 * self.bm25[rowid] / self.best
        covered = w.coverage * self.share(mask)
        if rowid in self.partial:
            covered += w.coverage * w.prefix * self.share(self.partial[rowid])
        entity = 0.0
        if self.entities:
            entity = w.entity * (mask & self.entities).bit_count() / self.n_entities
        context = 0.0
        links = self.near.get(rowid)
        if links:
            around, strongest, asked = 0, 0.0, 0.0
            for other, steps in links.items():
                around |= self.masks[other]
                value = self.bm25[other]
                if self.rows[other][8]:
                    value *= 1.0 - w.superseded
                strongest = max(strongest, value)
                if (
                    steps == 1
                    and value > asked
                    and "?" in self.rows[other][6]
                    and (self.rows[other][4], other) < (row[4], rowid)
                ):
                    asked = value  # it answers a question (written just before) that matches
            gain = self.share(around & ~mask)
            # a matching question just before it counts instead of the best neighbour when more
            neighbour = max(w.context * strongest, w.context_question * asked)
            context = w.context_terms * gain + neighbour / self.best
        created = row[4]
        # a memory of a day the query names is also in its month: it counts twice
        dated = w.date * min(2, sum(s.start <= created < s.end for s in self.spans))
        relevance = lexical + covered + entity + context + dated
        recency = w.recency * math.exp(-self.decay * max(0, self.now_ms - created))
        importance = w.importance * (row[5] - 0.5) * 2
        superseded = -w.superseded * relevance if row[8] else 0.0
        return (lexical, covered, entity, context, dated, recency, importance, superseded)
