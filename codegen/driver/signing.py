"""Ed25519 signatures over a firmware image and its manifest.

    tinyaot keygen -o KEYS/                       # KEYS/tinyaot_ed25519.pem (private, 0600) + .pub
    tinyaot sign FW.elf --key KEYS/tinyaot_ed25519.pem --model M.onnx --board qemu-m4
    tinyaot verify-signature FW.elf --pubkey KEYS/tinyaot_ed25519.pub

The manifest (JSON) records what the image is: sha256 and size of the image,
sha256 of the ONNX model, board, numerics, tinyaot version, arena and flash
bytes (from the compile's report.json and the ELF). The signature covers a
domain tag, the image's sha256 and the canonical manifest bytes, so changing
one byte of either is detected; verify-signature also recomputes the image's
sha256 and compares it with the manifest.

Exit codes: 0 valid; 1 the signature or image does not verify; 2 a problem
with the inputs (missing file, malformed key or manifest).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess

from .. import __version__
from ..errors import TinyAotError
from ..targets.boards import board_or_error

MANIFEST_FORMAT = "tinyaot-manifest-1"
DOMAIN = b"tinyaot firmware signature v1\x00"
DEFAULT_KEY_NAME = "tinyaot_ed25519"


class SignatureInvalid(Exception):
    """The image or manifest does not match the signature (exit 1)."""


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise TinyAotError(f"no such {what}", model=str(path)) from None
    except IsADirectoryError:
        raise TinyAotError(f"{what} is a directory", model=str(path)) from None
    except OSError as e:
        raise TinyAotError(f"cannot read {what}: {e.strerror}", model=str(path)) from None


def _sha256_file(path, what):
    return hashlib.sha256(_read(path, what)).hexdigest()


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signed_message(manifest: dict) -> bytes:
    return DOMAIN + bytes.fromhex(manifest["firmware_sha256"]) + canonical(manifest)


# ------------------------------------------------------------------- keys

def generate_keypair(out_dir, name=DEFAULT_KEY_NAME, force=False):
    """Write <out_dir>/<name>.pem (PKCS#8, mode 0600) and <name>.pub; returns both paths."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    os.makedirs(out_dir, exist_ok=True)
    priv_path = os.path.join(out_dir, name + ".pem")
    pub_path = os.path.join(out_dir, name + ".pub")
    for p in (priv_path, pub_path):
        if os.path.exists(p) and not force:
            raise TinyAotError("key file exists (not overwritten; use --force)", model=p)
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(priv)
    with open(pub_path, "wb") as f:
        f.write(pub)
    return priv_path, pub_path


def load_private_key(path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    data = _read(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise TinyAotError(f"not an unencrypted PEM private key ({e})", model=str(path)) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise TinyAotError("private key is not an Ed25519 key", model=str(path))
    return key


def load_public_key(path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = _read(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as e:
        raise TinyAotError(f"not a PEM public key ({e})", model=str(path)) from None
    if not isinstance(key, Ed25519PublicKey):
        raise TinyAotError("public key is not an Ed25519 key", model=str(path))
    return key


def _public_hex(pub) -> str:
    from cryptography.hazmat.primitives import serialization
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


# --------------------------------------------------------------- manifest

def _flash_bytes(firmware, board_name):
    """text + data of an ELF (what goes into flash); the file size for other images."""
    data = _read(firmware, "firmware image")
    if data[:4] != b"\x7fELF":
        return len(data)
    tool = "size"
    try:
        tool = board_or_error(board_name).get("toolchain_prefix", "") + "size"
    except TinyAotError:
        raise
    except Exception:  # noqa: BLE001 - board files without a toolchain: plain `size`
        pass
    try:
        out = subprocess.run([tool, str(firmware)], capture_output=True, text=True, check=True,
                             timeout=60).stdout.strip().splitlines()
        text, dat = (int(x) for x in out[1].split()[:2])
        return text + dat
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return len(data)


def make_manifest(firmware, model, board, report=None, numerics=None):
    rep = {}
    if report is not None:
        try:
            rep = json.loads(_read(report, "report.json").decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise TinyAotError("report is not JSON", model=str(report)) from None
        if not isinstance(rep, dict):
            raise TinyAotError("report is not a JSON object", model=str(report))
    fw = _read(firmware, "firmware image")
    num = numerics or rep.get("numerics")
    if num is None:
        raise TinyAotError("numerics unknown: give --numerics or --report report.json",
                           model=str(firmware))
    m = {
        "format": MANIFEST_FORMAT,
        "tinyaot_version": __version__,
        "firmware": os.path.basename(str(firmware)),
        "firmware_sha256": hashlib.sha256(fw).hexdigest(),
        "firmware_bytes": len(fw),
        "model": os.path.basename(str(model)),
        "model_sha256": _sha256_file(model, "model"),
        "board": board,
        "numerics": num,
        "arena_bytes": rep.get("arena_bytes"),
        "flash_bytes": _flash_bytes(firmware, board),
        "weights_bytes": rep.get("weights_bytes"),
    }
    if rep.get("integrity"):
        m["weights_digest"] = {"algorithm": rep["integrity"]["algorithm"],
                               "digest": rep["integrity"]["digest"]}
    return m


def sign_firmware(firmware, key_path, model, board, report=None, numerics=None, out=None):
    """Write the signed manifest (default <firmware>.manifest.json); returns its path."""
    key = load_private_key(key_path)
    manifest = make_manifest(firmware, model, board, report, numerics)
    sig = key.sign(signed_message(manifest))
    doc = {"manifest": manifest, "algorithm": "ed25519",
           "public_key": _public_hex(key.public_key()),
           "signature": base64.b64encode(sig).decode("ascii")}
    out = out or str(firmware) + ".manifest.json"
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out)
    return out


def verify_signature(firmware, manifest_path, pub_path) -> dict:
    """Returns the manifest if image, manifest and signature agree; raises
    SignatureInvalid if not, TinyAotError for malformed inputs."""
    from cryptography.exceptions import InvalidSignature

    pub = load_public_key(pub_path)
    try:
        doc = json.loads(_read(manifest_path, "manifest").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TinyAotError("manifest is not JSON", model=str(manifest_path)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("manifest"), dict) \
            or not isinstance(doc.get("signature"), str):
        raise TinyAotError("manifest has no 'manifest' object or 'signature'",
                           model=str(manifest_path))
    if doc.get("algorithm", "ed25519") != "ed25519":
        raise TinyAotError(f"unsupported signature algorithm {doc.get('algorithm')!r}",
                           model=str(manifest_path))
    manifest = doc["manifest"]
    if manifest.get("format") != MANIFEST_FORMAT:
        raise TinyAotError(f"unknown manifest format {manifest.get('format')!r}",
                           model=str(manifest_path))
    try:
        sig = base64.b64decode(doc["signature"], validate=True)
        msg = signed_message(manifest)
    except (ValueError, KeyError, TypeError):
        raise SignatureInvalid("manifest or signature is malformed") from None
    try:
        pub.verify(sig, msg)
    except InvalidSignature:
        raise SignatureInvalid("signature does not match the manifest (manifest modified, "
                               "or signed with another key)") from None
    digest = hashlib.sha256(_read(firmware, "firmware image")).hexdigest()
    if digest != manifest["firmware_sha256"]:
        raise SignatureInvalid(f"firmware image sha256 {digest} differs from the signed "
                               f"{manifest['firmware_sha256']} (image modified)")
    return manifest
