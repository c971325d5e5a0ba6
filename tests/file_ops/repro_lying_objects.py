"""Reproduce: an object that lies about its size bypasses the sandbox's quotas.

``class B(bytes): __len__ = lambda s: 0`` and ``write("x", B(b"A" * 10**7))``
wrote 10 MB under a 1 KiB quota and left ``bytes_used`` at 0; a ``str`` subclass
with a lying ``encode()`` did the same, and a ``str`` subclass path with a lying
``split()`` was written where its ``split()`` said, not where its text says.

    python tests/file_ops/repro_lying_objects.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import disk_usage, main, tree  # noqa: E402

from tepa_envs.file_ops.sandbox import Sandbox, SandboxError  # noqa: E402

QUOTA = 1024


class LyingBytes(bytes):
    def __len__(self) -> int:
        return 0


class LyingBytearray(bytearray):
    def __len__(self) -> int:
        return 0


class LyingStr(str):
    def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
        return LyingBytes(b"B" * 10**7)

    def __len__(self) -> int:
        return 0


class LyingPath(str):
    def split(self, *args: object, **kwargs: object) -> list[str]:  # type: ignore[override]
        return ["innocent.txt"]


CASES = [
    ("bytes subclass with __len__ = 0", LyingBytes),
    ("bytearray subclass with __len__ = 0", LyingBytearray),
    ("memoryview of a lying bytes subclass", lambda data: memoryview(LyingBytes(data))),
    ("str subclass with a lying encode() and __len__", lambda data: LyingStr(data.decode("ascii"))),
]


def reproduce(parent_dir: str) -> list[str]:
    problems: list[str] = []
    for label, make in CASES:
        sandbox = Sandbox(max_file_bytes=QUOTA, max_total_bytes=QUOTA, parent_dir=parent_dir)
        sandbox.reset()
        try:
            try:
                sandbox.write("x", make(b"A" * 10**7))
            except SandboxError:
                pass
            except Exception as exc:  # noqa: BLE001 - any other error is part of the report
                problems.append(f"{label}: {type(exc).__name__} instead of a SandboxError")
            on_disk, _ = disk_usage(sandbox.root)
            if on_disk > QUOTA or on_disk != sandbox.bytes_used:
                problems.append(f"{label}: {on_disk} bytes on disk under a {QUOTA}-byte quota, "
                                f"bytes_used = {sandbox.bytes_used}")
            sandbox.reset()
            try:
                written = sandbox.write("small", make(b"true content"))
            except SandboxError as exc:
                written = exc.reason
            content = tree(sandbox.root).get("small", b"")
            if (written, content, sandbox.bytes_used) != (12, b"true content", 12):
                problems.append(f"{label}: 'true content' was written as {len(content)} bytes "
                                f"{content[:16]!r}, counted as {written} (bytes_used {sandbox.bytes_used})")
        finally:
            sandbox.close()
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    try:
        try:
            sandbox.write(LyingPath("../escape.txt"), "x")
            problems.append(f"a str-subclass path '../escape.txt' with a lying split() was written as "
                            f"{sandbox.list()}")
        except SandboxError:
            pass
    finally:
        sandbox.close()
    return problems


if __name__ == "__main__":
    main("lying objects bypass the quotas", reproduce)
