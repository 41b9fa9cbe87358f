"""tinyaot keygen / sign / verify-signature: Ed25519 over the image and its manifest."""
from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys

import pytest

from codegen.driver.firmware import build_generated
from codegen.compiler import compile_model, write_outputs
from codegen.driver.signing import SignatureInvalid, sign_firmware, verify_signature
from tests.helpers.env import DEFAULT_MODEL, REPO


def cli(*args):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    d = tmp_path_factory.mktemp("sign")
    c = compile_model(DEFAULT_MODEL, numerics="tflite", integrity="sha256")
    gen = d / "gen"
    write_outputs(c, gen)
    image = build_generated(gen, "host", harness=False)
    p = cli("keygen", "-o", d / "keys")
    assert p.returncode == 0, p.stderr
    key, pub = d / "keys" / "tinyaot_ed25519.pem", d / "keys" / "tinyaot_ed25519.pub"
    p = cli("sign", image, "--key", key, "--model", DEFAULT_MODEL, "--board", "host")
    assert p.returncode == 0, p.stderr
    return {"dir": d, "image": image, "key": key, "pub": pub, "report": gen / "report.json",
            "manifest": image + ".manifest.json", "c": c}


def test_keygen_files_and_no_overwrite(signed):
    key = signed["key"]
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert b"PRIVATE KEY" in key.read_bytes() and b"PUBLIC KEY" in signed["pub"].read_bytes()
    p = cli("keygen", "-o", key.parent)
    assert p.returncode == 2 and "exists" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_manifest_contents(signed):
    doc = json.loads(open(signed["manifest"]).read())
    m = doc["manifest"]
    import hashlib
    assert m["firmware_sha256"] == hashlib.sha256(open(signed["image"], "rb").read()).hexdigest()
    assert m["model_sha256"] == hashlib.sha256(DEFAULT_MODEL.read_bytes()).hexdigest()
    rep = signed["c"].report
    assert (m["board"], m["numerics"], m["arena_bytes"]) == ("host", "tflite", rep["arena_bytes"])
    assert m["tinyaot_version"] == rep["tinyaot_version"]
    assert m["flash_bytes"] > 0 and m["weights_bytes"] == rep["weights_bytes"]
    assert m["weights_digest"]["digest"] == rep["integrity"]["digest"]
    assert len(base64.b64decode(doc["signature"])) == 64


def test_verify_accepts_the_signed_image(signed):
    p = cli("verify-signature", signed["image"], "--pubkey", signed["pub"])
    assert p.returncode == 0, p.stderr
    assert "signature OK" in p.stdout


def _copy(signed, name, image_patch=None, manifest_patch=None, sig_patch=None):
    d = signed["dir"] / name
    d.mkdir()
    img = open(signed["image"], "rb").read()
    if image_patch:
        img = image_patch(bytearray(img))
    (d / "fw.so").write_bytes(bytes(img))
    doc = json.loads(open(signed["manifest"]).read())
    if manifest_patch:
        manifest_patch(doc["manifest"])
    if sig_patch:
        doc["signature"] = sig_patch(doc["signature"])
    (d / "fw.so.manifest.json").write_text(json.dumps(doc))
    return d / "fw.so"


def _flip(b, at=None):
    i = len(b) // 2 if at is None else at
    b[i] ^= 0x01
    return b


@pytest.mark.parametrize("case", ["image_byte", "image_appended", "board", "numerics",
                                  "model_sha", "arena", "firmware_sha", "signature"])
def test_verify_rejects_modified_image_or_manifest(signed, case):
    patches = {
        "image_byte": dict(image_patch=_flip),
        "image_appended": dict(image_patch=lambda b: b + b"\0"),
        "board": dict(manifest_patch=lambda m: m.update(board="qemu-m4")),
        "numerics": dict(manifest_patch=lambda m: m.update(numerics="ort")),
        "model_sha": dict(manifest_patch=lambda m: m.update(model_sha256="0" * 64)),
        "arena": dict(manifest_patch=lambda m: m.update(arena_bytes=m["arena_bytes"] + 1)),
        # the attacker also updates the image hash in the manifest: the signature catches it
        "firmware_sha": dict(image_patch=_flip,
                             manifest_patch=lambda m: m.update(firmware_sha256="ab" * 32)),
        "signature": dict(sig_patch=lambda s: base64.b64encode(
            bytes(_flip(bytearray(base64.b64decode(s)), 0))).decode()),
    }
    fw = _copy(signed, case, **patches[case])
    with pytest.raises(SignatureInvalid):
        verify_signature(fw, str(fw) + ".manifest.json", signed["pub"])
    p = cli("verify-signature", fw, "--pubkey", signed["pub"])
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "signature INVALID" in p.stderr and "Traceback" not in p.stderr


def test_verify_rejects_another_key(signed):
    other = signed["dir"] / "other"
    assert cli("keygen", "-o", other).returncode == 0
    p = cli("verify-signature", signed["image"], "--pubkey", other / "tinyaot_ed25519.pub")
    assert p.returncode == 1 and "signature INVALID" in p.stderr


def test_resigning_a_modified_image_needs_the_private_key(signed, tmp_path):
    fw = _copy(signed, "resigned", image_patch=_flip)
    other = tmp_path / "k"
    assert cli("keygen", "-o", other).returncode == 0
    sign_firmware(fw, other / "tinyaot_ed25519.pem", DEFAULT_MODEL, "host", signed["report"])
    with pytest.raises(SignatureInvalid):
        verify_signature(fw, str(fw) + ".manifest.json", signed["pub"])
    assert verify_signature(fw, str(fw) + ".manifest.json", other / "tinyaot_ed25519.pub")


@pytest.mark.parametrize("case", ["not_json", "no_signature", "missing_manifest", "bad_pubkey",
                                  "private_as_public", "missing_image"])
def test_bad_inputs_are_clean_errors(signed, case, tmp_path):
    fw = tmp_path / "fw.so"
    fw.write_bytes(open(signed["image"], "rb").read())
    man = tmp_path / "fw.so.manifest.json"
    man.write_text(open(signed["manifest"]).read())
    pub = signed["pub"]
    if case == "not_json":
        man.write_text("{ not json")
    elif case == "no_signature":
        man.write_text(json.dumps({"manifest": {}}))
    elif case == "missing_manifest":
        man.unlink()
    elif case == "bad_pubkey":
        pub = tmp_path / "bad.pub"
        pub.write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    elif case == "private_as_public":
        pub = signed["key"]
    else:
        fw.unlink()
        fw = tmp_path / "fw.so"
    p = cli("verify-signature", fw, "--pubkey", pub, "--manifest", man)
    assert p.returncode == 2, (case, p.returncode, p.stderr)
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tinyaot: error:"), err


def test_sign_with_a_public_key_is_a_clean_error(signed, tmp_path):
    p = cli("sign", signed["image"], "--key", signed["pub"], "--model", DEFAULT_MODEL,
            "--board", "host", "-o", tmp_path / "m.json")
    assert p.returncode == 2 and "private key" in p.stderr
    assert not (tmp_path / "m.json").exists()
