"""Opt-in Ed25519 signatures of result records (docs/audit.md, "Signatures"); needs the ``sign`` extra.

A signature proves that the holder of a private key made a record: digests
and replays prove only that a record is consistent and follows from its
scores, which anyone can arrange. The signature goes in the record's optional
``signature`` field (:class:`~verifier.types.RecordSignature`), which is left
out of every dump when unset (unsigned records stay byte-identical) and is
covered by no digest. What is signed is

    b"onnx-claim-verifier record signature v1\\n" + canonical(record without "signature")

(:func:`verifier.decision.audit.canonical` over ``model_dump(mode="json")``),
so every field of the record is bound, ``resolved_revision`` and
``model_called`` included; the envelope's ``id`` and ``line`` are not.
``key_id`` is the sha256 hex of the raw 32-byte public key.

Keys are PEM files: the private key PKCS#8 (unencrypted, written 0600), the
public key SubjectPublicKeyInfo (:func:`generate_keypair`).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from .audit import canonical
from ..small_files import key_file_exposure, read_small_file, read_small_file_with_stat
from ..strictjson import loads as strict_loads
from ..types import ClaimVerification, RecordSignature

__all__ = ["SIGNED_PREFIX", "PrivateKey", "PublicKey", "generate_keypair", "load_private_key", "load_public_key", "signed_bytes"]

#: Domain separation: a signature over a record is never valid for another message.
SIGNED_PREFIX = b"onnx-claim-verifier record signature v1\n"

_LOG = logging.getLogger("verifier.decision")


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise ImportError(
            "signatures need the cryptography package: the sign extra (pip install -e '.[sign]' in a checkout, "
            "or the built wheel with [sign]; bash scripts/setup.sh export,test,sign)"
        ) from None
    return serialization, ed25519


def signed_bytes(result: Union[ClaimVerification, Mapping[str, Any]]) -> bytes:
    """The bytes a record's signature is over (its canonical JSON without ``signature``, prefixed).

    ``result`` is a record or its JSON object as stored (a mapping, read without coercion).

    Raises:
        ValueError: the mapping holds NaN or infinity.
    """
    data = dict(result.model_dump(mode="json") if isinstance(result, ClaimVerification) else result)
    data.pop("signature", None)
    return SIGNED_PREFIX + canonical(data).encode("utf-8")


def _raw_public(public: Any) -> bytes:
    serialization, _ = _crypto()
    return bytes(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _read(path: Union[str, "os.PathLike[str]"], what: str) -> bytes:
    """The key file, bounded: ``/dev/zero`` or a FIFO is refused, never read or waited on."""
    return read_small_file(path, what)


def _canonical_signature(text: str) -> Optional[bytes]:
    """The 64 bytes ``text`` spells, only when ``text`` is their one canonical base64 (``None`` otherwise).

    Decoding ignores the unused low bits of the last character, so 16 spellings give the same bytes; only the
    one :meth:`PrivateKey.sign` writes is accepted, so equal records are equal bytes.
    """
    try:
        value = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    return value if len(value) == 64 and base64.b64encode(value).decode("ascii") == text else None


class PrivateKey:
    """An Ed25519 private key that signs records."""

    def __init__(self, key: Any) -> None:
        self._key = key
        self.key_id = hashlib.sha256(_raw_public(key.public_key())).hexdigest()

    def public_key(self) -> "PublicKey":
        """The matching public key (what ``check --public-key`` verifies with)."""
        return PublicKey(self._key.public_key())

    def sign(self, result: ClaimVerification) -> ClaimVerification:
        """``result`` with its ``signature`` set (any earlier signature replaced)."""
        value = self._key.sign(signed_bytes(result))
        signature = RecordSignature(key_id=self.key_id, value=base64.b64encode(value).decode("ascii"))
        return result.model_copy(update={"signature": signature})


class PublicKey:
    """An Ed25519 public key that verifies record signatures."""

    def __init__(self, key: Any) -> None:
        self._key = key
        self.key_id = hashlib.sha256(_raw_public(key)).hexdigest()

    def problems(
        self, result: ClaimVerification, stored: Optional[Union[Mapping[str, Any], str, bytes]] = None
    ) -> list[str]:
        """Why ``result`` is not signed by this key's holder (empty: it is).

        ``stored`` is the record as it was read (its JSON text or object), when ``result`` was parsed from
        one: the signature is then verified over those values, not over what parsing made of them (a
        ``"true"`` where ``true`` was signed, ``3.0`` for ``3``, a re-spelled UUID), so every field must be
        exactly as signed (docs/audit.md, "Signatures").
        """
        signature = result.signature
        if signature is None:
            return ["the record is not signed (check --public-key refuses unsigned records)"]
        if signature.key_id != self.key_id:
            return [f"the record is signed by another key (key_id {signature.key_id[:16]}..., this key {self.key_id[:16]}...)"]
        from cryptography.exceptions import InvalidSignature

        value = _canonical_signature(signature.value)
        if value is None:
            return ["the signature value is not the canonical base64 of a 64-byte signature (padding and the last "
                    "character's unused bits zero, as signing writes it): a re-spelled signature never verifies"]
        try:
            if isinstance(stored, (str, bytes)):
                stored = strict_loads(stored)
            if stored is not None and not isinstance(stored, Mapping):
                raise ValueError("the stored record is not a JSON object")
            message = signed_bytes(result if stored is None else stored)
            self._key.verify(value, message)
        except (InvalidSignature, ValueError):
            return ["the signature does not verify: the record was changed after it was signed, or forged"]
        return []


def load_private_key(path: Union[str, "os.PathLike[str]"]) -> PrivateKey:
    """Read a PEM (PKCS#8, unencrypted) Ed25519 private key.

    Raises:
        ValueError: unreadable, or not an unencrypted Ed25519 private key (the message names the file).
        ImportError: the ``sign`` extra is not installed.
    """
    serialization, ed25519 = _crypto()
    data, status = read_small_file_with_stat(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ValueError(f"{path} is not an Ed25519 private key (got {type(key).__name__})")
    _warn_exposed(path, status)
    return PrivateKey(key)


#: Signing key files already warned about (device, inode, mode, owner): a command loads its key more than once.
_WARNED: set[tuple[int, int, int, int]] = set()


def _warn_exposed(path: Union[str, "os.PathLike[str]"], status: os.stat_result) -> None:
    """Warn (once per file and status) when others can read the key or its owner is another user: either can
    sign records as this key's holder. Used all the same, like the score store's key (docs/security.md)."""
    seen = (status.st_dev, status.st_ino, status.st_mode, status.st_uid)
    reasons = key_file_exposure(status)
    if reasons and seen not in _WARNED:
        _WARNED.add(seen)
        for reason in reasons:
            _LOG.warning("signing key %s is %s", path, reason)


def load_public_key(path: Union[str, "os.PathLike[str]"]) -> PublicKey:
    """Read a PEM Ed25519 public key (what :func:`generate_keypair` writes beside the private key).

    Raises:
        ValueError: unreadable, or not an Ed25519 public key (the message names the file).
        ImportError: the ``sign`` extra is not installed.
    """
    serialization, ed25519 = _crypto()
    data = _read(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not a PEM public key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError(f"{path} is not an Ed25519 public key (got {type(key).__name__})")
    return PublicKey(key)


def generate_keypair(out: Union[str, "os.PathLike[str]"]) -> tuple[Path, Path, str]:
    """Write a new Ed25519 private key to ``out`` (mode 0600, never over an existing file) and its public key to ``out.pub``.

    Returns:
        (private key path, public key path, key id).

    Raises:
        FileExistsError: ``out`` or ``out.pub`` exists (a key is never overwritten).
        OSError: the files cannot be written.
        ImportError: the ``sign`` extra is not installed.
    """
    serialization, ed25519 = _crypto()
    private_path = Path(out)
    public_path = private_path.with_name(private_path.name + ".pub")
    if public_path.exists():
        raise FileExistsError(f"{public_path} exists: a key is never overwritten")
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    public_path.write_bytes(public_pem)
    return private_path, public_path, hashlib.sha256(_raw_public(key.public_key())).hexdigest()
