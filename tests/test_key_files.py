"""Key files not the process's alone are never used silently (issue 49, items 3 and 6).

Regression: ``store_key.py`` checked only the mode bits, so a 0600 store key
owned by another uid (planted beside the store, its rows later rewritten
under it) was used with no warning; a world-readable ``--sign-key`` gave no
warning at all, while a world-readable store key did.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from verifier.engine.store_key import load_key
from verifier.small_files import key_file_exposure

#: A user id that is not this process's (``nobody`` on most systems).
OTHER_UID = 65534


def _status(mode: int, uid: int) -> os.stat_result:
    """A regular file's status with this mode and owner (the other fields do not matter here)."""
    return os.stat_result((0o100000 | mode, 1, 1, 1, uid, uid, 65, 0, 0, 0))


def test_exposure_names_the_mode_bits_and_a_foreign_owner() -> None:
    """Every combination of an own/foreign owner and a private/shared mode, the process running as uid 1000."""
    assert key_file_exposure(_status(0o600, 1000), euid=1000) == []
    assert key_file_exposure(_status(0o400, 1000), euid=1000) == []
    (mode,) = key_file_exposure(_status(0o640, 1000), euid=1000)
    assert mode == "readable or writable by others (mode 640); chmod 600 it"
    (owner,) = key_file_exposure(_status(0o600, 1001), euid=1000)
    assert owner.startswith("owned by another user (uid 1001; this process runs as uid 1000)")
    assert len(key_file_exposure(_status(0o602, 1001), euid=1000)) == 2


def _foreign(path: Path) -> bool:
    """Give ``path`` to another user when this process may (root); whether it did."""
    if os.geteuid() != 0:
        return False
    os.chown(path, OTHER_UID, OTHER_UID)
    return True


def test_a_store_key_owned_by_another_user_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Bug: a 0600 store key owned by another uid was used silently (a 0644 one got the warning)."""
    key = tmp_path / "scores.sqlite.key"
    key.write_text("ab" * 32 + "\n", encoding="ascii")
    os.chmod(key, 0o600)
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        load_key(tmp_path / "scores.sqlite", None)
    assert caplog.records == []  # the process's own 0600 key: nothing to say
    if _foreign(key):
        with caplog.at_level(logging.WARNING, logger="verifier.engine"):
            loaded, path = load_key(tmp_path / "scores.sqlite", None)
        assert (loaded, path) == (("ab" * 32).encode("ascii"), key)  # used, as docs/score-store.md says
        (record,) = caplog.records
        assert record.getMessage().startswith(f"score store key {key} is owned by another user (uid {OTHER_UID};")
    else:  # not root: ownership is shown by the status test above; the mode warning still runs end to end
        os.chmod(key, 0o644)
        with caplog.at_level(logging.WARNING, logger="verifier.engine"):
            load_key(tmp_path / "scores.sqlite", None)
        (record,) = caplog.records
        assert record.getMessage() == f"score store key {key} is readable or writable by others (mode 644); chmod 600 it"


def test_a_shared_or_foreign_signing_key_is_warned_about_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Bug: a world-readable (or another user's) --sign-key gave no warning, unlike the store key."""
    pytest.importorskip("cryptography")  # the sign extra
    from verifier.decision.signing import generate_keypair, load_private_key

    private, _, _ = generate_keypair(tmp_path / "signing.key")
    with caplog.at_level(logging.WARNING, logger="verifier.decision"):
        load_private_key(private)
    assert caplog.records == []  # keygen's own 0600 file
    os.chmod(private, 0o644)
    foreign = _foreign(private)
    with caplog.at_level(logging.WARNING, logger="verifier.decision"):
        for _ in range(3):  # verify loads its key more than once: one warning per reason
            load_private_key(private)
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == f"signing key {private} is readable or writable by others (mode 644); chmod 600 it"
    if foreign:
        assert messages[1].startswith(f"signing key {private} is owned by another user (uid {OTHER_UID};")
    assert len(messages) == 1 + foreign
