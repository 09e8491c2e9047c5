"""The gitleaks data file is read from its parsed twin (``gitleaks.json``) only when the
twin names the data file's bytes as they are; any other twin is not read."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

from sealmem.client.store.redaction import gitleaks

FOLDER = Path(gitleaks.__file__).parent
REGENERATE = (
    "gitleaks.toml changed: write its twin again with python -c 'from pathlib import Path; "
    "from sealmem.client.store.redaction import gitleaks; "
    "gitleaks.write_twin(Path(gitleaks.__file__).parent)'"
)
EXTRA_RULE = '''
[[rules]]
id = "sealmem-test-rule"
description = "a rule added after the twin was written"
regex = """zz-test-[0-9]{12}"""
keywords = ["zz-test-"]
'''


def test_the_twin_holds_the_data_file_as_tomllib_parses_it() -> None:
    raw = (FOLDER / gitleaks.DATA).read_bytes()
    twin = json.loads((FOLDER / gitleaks.TWIN).read_text(encoding="utf-8"))
    assert twin["toml_sha256"] == hashlib.sha256(raw).hexdigest(), REGENERATE
    assert twin["data"] == tomllib.loads(raw.decode("utf-8")), REGENERATE
    assert gitleaks.read_data(FOLDER) == tomllib.loads(raw.decode("utf-8"))


def test_a_data_file_changed_after_its_twin_is_read_as_it_is_now(tmp_path: Path) -> None:
    raw = (FOLDER / gitleaks.DATA).read_bytes()
    (tmp_path / gitleaks.DATA).write_bytes(raw)
    gitleaks.write_twin(tmp_path)
    assert gitleaks.read_data(tmp_path) == tomllib.loads(raw.decode("utf-8"))
    changed = raw + EXTRA_RULE.encode()
    (tmp_path / gitleaks.DATA).write_bytes(changed)  # the twin still names the old bytes
    data = gitleaks.read_data(tmp_path)
    assert data == tomllib.loads(changed.decode("utf-8"))
    assert data["rules"][-1]["id"] == "sealmem-test-rule"


def test_a_twin_that_is_not_one_is_not_read(tmp_path: Path) -> None:
    raw = (FOLDER / gitleaks.DATA).read_bytes()
    (tmp_path / gitleaks.DATA).write_bytes(raw)
    want = tomllib.loads(raw.decode("utf-8"))
    assert gitleaks.read_data(tmp_path) == want  # no twin at all
    for body in ("not json", "[]", '{"toml_sha256": 1}', json.dumps({"data": {}})):
        (tmp_path / gitleaks.TWIN).write_text(body, encoding="utf-8")
        assert gitleaks.read_data(tmp_path) == want, body
    digest = hashlib.sha256(raw).hexdigest()
    (tmp_path / gitleaks.TWIN).write_text(json.dumps({"toml_sha256": digest}), encoding="utf-8")
    assert gitleaks.read_data(tmp_path) == want  # names the bytes, holds no data
