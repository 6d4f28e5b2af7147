"""A hub download cut midway resumes on the next try, from the bytes already on disk.

huggingface_hub (2.x) writes every try of a file to a new temporary file and deletes it when
the try fails, so a connection that drops at 90 % starts again from byte 0. Here each file of
a repository goes first to a partial file of our own in the Hugging Face cache,
`blobs/<etag>.part` (a name huggingface_hub never uses), which a failed try leaves in place;
the next try asks the hub only for the rest (an HTTP Range request; a server that ignores it
sends the whole file again, and the partial file starts over). A whole file is checked against
its size and, when the hub names one, its sha256, then renamed to `blobs/<etag>`, exactly where
huggingface_hub keeps it: snapshot_download, called afterwards, finds every blob present and
only links the snapshot to it. huggingface_hub's lock of that blob is held while it is written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

PART = ".part"
CHUNK = 1 << 20
SHA256 = re.compile(r"^[0-9a-f]{64}$")  # an LFS file's etag is the sha256 of its bytes


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _get_rest(url: str, location: str, part: Path, have: int,
              report: Callable[[int], None]) -> None:
    """Append to `part` the bytes after its first `have` (all of them, `part` started over,
    when the server ignores the Range request); report(bytes in `part`) as they arrive.
    Raises on a cut connection, leaving what arrived in `part`."""
    from huggingface_hub import constants
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    same_host = urlparse(url).netloc == urlparse(location).netloc  # else a signed CDN address
    headers = build_hf_headers() if same_host else {}
    if have:
        headers["Range"] = f"bytes={have}-"
    with get_session().stream("GET", location, headers=headers, follow_redirects=True,
                              timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT) as response:
        hf_raise_for_status(response)
        if response.status_code != 206:  # the whole file came: start the partial file over
            have = 0
        with part.open("ab" if have else "wb") as out:
            report(have)
            for chunk in response.iter_bytes():  # as it arrives: a cut keeps what came
                out.write(chunk)
                have += len(chunk)
                report(have)


def _fetch_one(url: str, meta, part: Path, report: Callable[[int], None]) -> None:
    """One file into `part`, from where an earlier try stopped, then its size and checksum
    checked (a file that fails the checksum is deleted, never resumed from again)."""
    location = url if meta.xet_file_data is not None else meta.location
    have = part.stat().st_size if part.exists() else 0
    if meta.size is not None and have > meta.size:
        have = 0
    if meta.size is None or have < meta.size:  # else a try stopped between the last byte
        _get_rest(url, location, part, have, report)  # and the rename: nothing to ask for
    have = part.stat().st_size
    if meta.size is not None and have != meta.size:
        raise OSError(f"Consistency check failed: file should be of size {meta.size} but has "
                      f"size {have}")
    if SHA256.match(meta.etag) and _sha256(part) != meta.etag:
        part.unlink()
        raise OSError(f"the downloaded bytes of {url} do not match the hub's checksum")


def fetch_blobs(name: str, paths: list[str], report: Callable[[int], None],
                etag_timeout: float) -> None:
    """Every file of `paths` (in repository `name`) into the Hugging Face cache's blobs,
    resuming partial files; report(bytes of these files on disk) as they arrive."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import repo_folder_name
    from huggingface_hub.utils import WeakFileLock

    folder = repo_folder_name(repo_id=name, repo_type="model")
    blobs = Path(constants.HF_HUB_CACHE) / folder / "blobs"
    locks = Path(constants.HF_HUB_CACHE) / ".locks" / folder
    blobs.mkdir(parents=True, exist_ok=True)
    locks.mkdir(parents=True, exist_ok=True)
    before = 0
    for path in paths:
        url = hf_hub_url(name, path)
        meta = get_hf_file_metadata(url, timeout=etag_timeout)
        blob = blobs / meta.etag
        with WeakFileLock(locks / f"{meta.etag}.lock"):
            if not blob.exists():
                part = blob.with_name(blob.name + PART)
                _fetch_one(url, meta, part, lambda n, base=before: report(base + n))
                part.replace(blob)
        before += blob.stat().st_size
        report(before)
