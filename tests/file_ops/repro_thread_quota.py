"""Reproduce: threads bypass the sandbox's quotas and desynchronize its accounting.

32 threads writing 256 KiB each into a 1 MiB / 8-file sandbox left 3 MiB and 24
entries on disk; a thread moving a directory back and forth while others write
into it made ``bytes_used`` (and the files the sandbox tracks) disagree with the disk.

    python tests/file_ops/repro_thread_quota.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import disk_usage, main, tree  # noqa: E402

from tepa_envs.file_ops.sandbox import Sandbox, SandboxError  # noqa: E402

KIB = 1024


def _run_threads(targets: list) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(targets))

    def run(target) -> None:
        barrier.wait()
        try:
            target()
        except SandboxError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _tracked_matches_disk(sandbox: Sandbox) -> str | None:
    on_disk = {path: len(data) for path, data in tree(sandbox.root).items() if isinstance(data, bytes)}
    tracked = {"/".join(parts): size for parts, size in sandbox._sizes.items()}
    size, entries = disk_usage(sandbox.root)
    if tracked != on_disk or size != sandbox.bytes_used or entries != sandbox.files_used:
        return (f"tracked files {sorted(tracked)} ({sandbox.bytes_used} bytes, {sandbox.files_used} entries) "
                f"vs on disk {sorted(on_disk)} ({size} bytes, {entries} entries)")
    return None


def reproduce(parent_dir: str, rounds: int = 3) -> list[str]:
    problems: list[str] = []
    for _ in range(rounds):
        sandbox = Sandbox(max_file_bytes=256 * KIB, max_total_bytes=1024 * KIB, max_files=8, parent_dir=parent_dir)
        sandbox.reset()
        try:
            payload = b"x" * (256 * KIB)
            errors = _run_threads([lambda i=i: sandbox.write(f"f{i}.bin", payload) for i in range(32)])
            size, entries = disk_usage(sandbox.root)
            if size > 1024 * KIB or entries > 8:
                problems.append(f"32 threads x 256 KiB: {size // KIB} KiB and {entries} entries on disk "
                                f"under a 1 MiB / 8-entry quota")
            mismatch = _tracked_matches_disk(sandbox)
            if mismatch:
                problems.append(f"32 writers: {mismatch}")
            problems += [f"32 writers: {type(e).__name__}: {e}" for e in errors]
        finally:
            sandbox.close()

        sandbox = Sandbox(parent_dir=parent_dir)
        sandbox.reset()
        try:
            sandbox.write("a/seed.txt", "seed")

            def mover() -> None:
                for _ in range(200):
                    for src, dst in (("a", "b"), ("b", "a")):
                        try:
                            sandbox.move(src, dst)
                        except SandboxError:
                            pass

            def writer(i: int) -> None:
                for j in range(60):
                    for top in ("a", "b"):
                        try:
                            sandbox.write(f"{top}/w{i}-{j % 5}.txt", "y" * (j + 1))
                        except SandboxError:
                            pass

            errors = _run_threads([mover] + [lambda i=i: writer(i) for i in range(4)])
            mismatch = _tracked_matches_disk(sandbox)
            if mismatch:
                problems.append(f"move + write: {mismatch}")
            problems += [f"move + write: {type(e).__name__}: {e}" for e in errors]
        finally:
            sandbox.close()
        if problems:
            break
    return problems


if __name__ == "__main__":
    main("threads bypass the quotas", reproduce)
