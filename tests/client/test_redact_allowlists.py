"""The gitleaks allowlists compile on first use (most texts never hold a finding to
allow): each must compile under Python, and a first use from several threads at once
answers as one thread does."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from sealmem.client.store.redaction import gitleaks

SAMPLES = [
    ("AKIAIOSFODNN7EXAMPLE", "key = AKIAIOSFODNN7EXAMPLE", "key = AKIAIOSFODNN7EXAMPLE"),
    ("${SECRET_TOKEN}", "token=${SECRET_TOKEN}", "export token=${SECRET_TOKEN}"),
    ("xxxxxxxxxxxxxxxx", "api_key: xxxxxxxxxxxxxxxx", "api_key: xxxxxxxxxxxxxxxx"),
    ("9f86d081884c7d65", "secret=9f86d081884c7d65", "secret=9f86d081884c7d65 # sample"),
]


def _allowlists() -> list[gitleaks.Allowlist]:
    specs, everywhere = gitleaks.specs()
    return [everywhere, *(allow for spec in specs for allow in spec.allowlists)]


def test_every_gitleaks_allowlist_compiles_under_python() -> None:
    allowlists = _allowlists()
    assert sum(len(a.regexes) for a in allowlists) > 10
    for allow in allowlists:
        assert len(allow.patterns) == len(allow.regexes)  # a Go-only construct raises here


def test_a_first_use_from_threads_answers_as_one_thread() -> None:
    def answers(allow: gitleaks.Allowlist) -> list[bool]:
        return [allow.allows(*sample) for sample in SAMPLES]

    alone = [answers(dataclasses.replace(a)) for a in _allowlists()]
    for _ in range(3):
        fresh = [dataclasses.replace(a) for a in _allowlists()]  # not compiled yet
        with ThreadPoolExecutor(max_workers=8) as pool:
            runs = [pool.map(answers, fresh) for _ in range(8)]
            assert all(list(run) == alone for run in runs)
    assert any(any(row) for row in alone)  # some sample is allowed: the answers can differ
