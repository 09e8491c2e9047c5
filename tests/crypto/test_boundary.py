"""The crypto package's surface and its boundary: only crypto/ imports nacl."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

import sealmem.crypto
from sealmem.crypto import SUITE, NaclSuite, aead, hashing, keyfile, keys, padding, signing, suite
from sealmem.protocol.errors import CryptoError, InputError, SealmemError

ROOT = Path(__file__).resolve().parents[2]
MODULES = [aead, hashing, keyfile, keys, padding, signing, suite]


def _imports_nacl(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__":
            names = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
        else:
            continue
        if any(n == "nacl" or n.startswith("nacl.") for n in names):
            lines.append(node.lineno)
    return lines


@pytest.mark.slow
def test_no_module_outside_crypto_imports_nacl() -> None:
    offenders = []
    for top in ("client", "hub", "protocol"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for line in _imports_nacl(path):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
            if 'importlib.import_module("nacl' in path.read_text(encoding="utf-8"):
                offenders.append(f"{path.relative_to(ROOT)}: importlib")
    assert not offenders, f"only crypto/ may import nacl: {offenders}"


def test_the_check_sees_an_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom nacl.public import Box\nimport nacl\n")
    assert _imports_nacl(sample) == [2, 3]


def _public_names(module: types.ModuleType) -> set[str]:
    """Names a module defines at top level (classes, functions, assignments), not imports."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_lists_the_public_names(module: types.ModuleType) -> None:
    declared = set(module.__all__)
    assert all(hasattr(module, name) for name in declared)
    missing = _public_names(module) - declared
    assert not missing, f"{module.__name__}.__all__ lacks {missing}"


def test_package_exports_the_contract() -> None:
    contract = {
        "DOMAIN_PREFIX", "domain_message", "kid_from_public", "verify", "blake2b", "padme",
        "pad", "unpad", "equal", "random_bytes", "MemberKey", "PublicIdentity", "ContentKey",
        "CryptoError", "BadSignatureError", "DecryptionError", "KeyFileError",
    }  # fmt: skip
    assert contract <= set(sealmem.crypto.__all__)
    assert all(hasattr(sealmem.crypto, name) for name in sealmem.crypto.__all__)


def test_errors_share_the_root() -> None:
    for error in (
        sealmem.crypto.BadSignatureError,
        sealmem.crypto.DecryptionError,
        sealmem.crypto.KeyFileError,
    ):
        assert issubclass(error, CryptoError)
        assert issubclass(error, SealmemError)
    assert issubclass(InputError, ValueError)


def test_suite_offers_the_protocol_methods() -> None:
    assert isinstance(SUITE, NaclSuite)
    for name in ("verify", "blake2b", "pad", "unpad", "kid_from_public"):
        assert callable(getattr(SUITE, name))


def test_objects_fit_the_protocol_interfaces() -> None:
    """The duck types ``sealmem.protocol.suite`` declares (checked by mypy, run here)."""
    from sealmem.crypto import ContentKey, MemberKey, random_bytes
    from sealmem.protocol import suite as interfaces

    crypto_suite: interfaces.Suite = SUITE
    signer: interfaces.Signer = MemberKey(b"\x03" * 32, b"\x04" * 32)
    content: interfaces.ContentKeyLike = ContentKey(b"\x05" * 32)
    wrapper: interfaces.Wrapper = ContentKey(b"\x05" * 32)
    rand: interfaces.RandomSource = random_bytes

    signature = signer.sign("manifest", b"m")
    assert isinstance(signer, MemberKey)
    crypto_suite.verify(signer.sign_public, "manifest", b"m", signature)
    assert crypto_suite.kid_from_public(signer.sign_public) == signer.kid
    blob = content.encrypt(crypto_suite.pad(b"chunk"), b"ad", nonce=rand(24))
    assert crypto_suite.unpad(content.decrypt(blob, b"ad")) == b"chunk"
    assert ContentKey.unwrap(wrapper.wrap_to(signer.box_public), signer) == content
