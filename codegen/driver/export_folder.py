"""The export folder on disk: what tinyaot wrote there (tinyaot-files.json,
every file with its SHA-256) and what the user added.

Exporting again into an earlier export replaces what tinyaot wrote and keeps
what the user added (the summary lists it); a file tinyaot wrote that the
user has since changed is never overwritten: the export is refused, nothing
is touched. example/build/ (what `make` in example/ writes) is dropped, as
it is rebuilt from the new sources.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field

from ..errors import TinyAotError

MANIFEST = "tinyaot-files.json"
MARKER = "tinyaot.mk"
DERIVED = ("example/build",)  # make's output in the example: rebuilt, not kept


@dataclass
class Previous:
    """An earlier export in the destination: the files and empty folders the
    user added to it."""
    user_files: list = field(default_factory=list)
    user_dirs: list = field(default_factory=list)


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _walk(root):
    """(files, empty folders) under root, as /-separated relative paths;
    DERIVED folders left out."""
    files, empty = [], []
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root).replace(os.sep, "/")
        if rel in DERIVED:
            dirs[:] = []
            continue
        pre = "" if rel == "." else rel + "/"
        for x in list(dirs):
            if os.path.islink(os.path.join(d, x)):  # a link to a folder: keep the link
                files.append(pre + x)
                dirs.remove(x)
        files += [pre + n for n in names]
        if not names and not dirs and pre:
            empty.append(rel)
    return sorted(files), sorted(empty)


def check_destination(out_dir):
    """Previous(...) for an earlier export in out_dir, None for a new or empty
    folder; TinyAotError (nothing touched) when tinyaot must not write there."""
    if not os.path.exists(out_dir):
        return None
    if not os.path.isdir(out_dir):
        raise TinyAotError(f"{out_dir} exists and is not a folder (refusing to overwrite it)")
    if not os.listdir(out_dir):
        return None
    if not os.path.exists(os.path.join(out_dir, MARKER)):
        raise TinyAotError(f"{out_dir} exists and is not an earlier tinyaot export "
                           "(refusing to overwrite it): choose a new folder")
    try:
        with open(os.path.join(out_dir, MANIFEST)) as f:
            wrote = json.load(f)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise TinyAotError(f"{out_dir} is an export without a readable {MANIFEST} (an older "
                           "tinyaot, or the file was removed): tinyaot cannot tell your files "
                           "from its own there; move your files out and delete the folder, "
                           "or choose a new folder") from None
    files, empty = _walk(out_dir)
    changed = [f for f in files if f in wrote and not os.path.islink(os.path.join(out_dir, f))
               and _sha256(os.path.join(out_dir, f)) != wrote[f]]
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        raise TinyAotError(f"{out_dir}: {changed[0]}{more} changed since the last export and "
                           "would be overwritten (refusing): copy your changes elsewhere, or "
                           "delete the file to take the new one")
    user = [f for f in files if f not in wrote and f != MANIFEST]
    return Previous(user, empty)


def write_manifest(tmp):
    """tinyaot-files.json in tmp: every file written there, with its SHA-256."""
    files, _ = _walk(tmp)
    from .. import __version__
    with open(os.path.join(tmp, MANIFEST), "w") as f:
        json.dump({"tinyaot_version": __version__,
                   "note": "the files tinyaot export wrote; any other file here is yours and "
                           "is kept when exporting again",
                   "files": {p: _sha256(os.path.join(tmp, p)) for p in files}},
                  f, indent=1, sort_keys=True)
        f.write("\n")


def install(tmp, out_dir, previous):
    """Move the new export `tmp` into out_dir, carrying the user's files over;
    returns the kept paths."""
    kept = []
    if previous is not None:
        clash = [p for p in previous.user_files + previous.user_dirs
                 if os.path.lexists(os.path.join(tmp, p))]
        if clash:
            raise TinyAotError(f"{out_dir}: your file {clash[0]} has the name of a file this "
                               "export writes (refusing): rename or move it")
        for p in previous.user_files:
            dst = os.path.join(tmp, p)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(out_dir, p), dst, follow_symlinks=False)
        for p in previous.user_dirs:
            os.makedirs(os.path.join(tmp, p), exist_ok=True)
        kept = previous.user_files + previous.user_dirs
    if os.path.isdir(out_dir):
        old = out_dir + ".tinyaot-old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out_dir)
    return sorted(kept)
