"""Reading and sealing large entries with fewer copies gives the bytes of the plain computations.

* :func:`~policylint.safeio.read_bytes` reads a file in one call when ``fstat``
  says how large it is: the same bytes, and the same refusals at the limit, as
  the 1 MiB reads it made before;
* :func:`~policylint.cache.store.seal_json` and
  :func:`~policylint.cache.store.unseal_json` join their parts once: the same
  sealed entry and the same body as the concatenations they replace.
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.cache import store
from policylint.safeio import RefusedFile, read_bytes

MIB = 1 << 20


def _plain_read(path: Path, limit: int) -> bytes:
    """read_bytes as it was: 1 MiB reads until the end or one byte over the limit."""
    chunks: list[bytes] = []
    remaining = limit + 1
    with open(path, "rb", buffering=0) as f:
        while remaining > 0:
            chunk = f.read(min(remaining, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("size", [0, 1, MIB - 1, MIB, MIB + 1, 3 * MIB + 17])
@pytest.mark.parametrize("slack", [-1, 0, 1, MIB])
def test_one_read_gives_the_bytes_and_refusals_of_many(tmp_path: Path, size: int, slack: int) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    limit = size + slack
    if limit < 0:
        return
    if size > limit:
        with pytest.raises(RefusedFile):
            read_bytes(path, limit=limit)
        return
    got = read_bytes(path, limit=limit)
    assert got == data == _plain_read(path, limit) and type(got) is bytes


def _plain_seal(key: bytes, body: bytes) -> bytes:
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    return body[:-1] + b',"mac":"' + mac + b'"}'


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_sealing_and_unsealing_equal_the_concatenations(tmp_path_factory: pytest.TempPathFactory, inner: bytes) -> None:
    folder = tmp_path_factory.getbasetemp() / "seal"
    folder.mkdir(exist_ok=True)
    body = b'{"k":' + inner + b"}"
    sealed = store.seal_json(folder, "documents", body)
    key = store._kind_key(folder, "documents")
    assert key is not None and sealed is not None
    assert sealed == _plain_seal(key, body) and type(sealed) is bytes
    opened = store.unseal_json(folder, "documents", sealed)
    assert opened == sealed[: -store._MAC_TAIL] + b"}" == body and type(opened) is bytes

