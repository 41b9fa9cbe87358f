#!/usr/bin/env bash
# Install everything tinyaot needs on a fresh Debian machine (run as root or
# with sudo available). Idempotent: safe to run twice.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(gcc make gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm qemu-user cppcheck)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "bootstrap: installing ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
echo "bootstrap: pip install -e .[test,cluster]"
"$PY" -m pip install -q --disable-pip-version-check -e ".[test,cluster]"

arm-none-eabi-gcc --version | head -n 1
qemu-system-arm --version | head -n 1
"$PY" -c "import codegen, onnx, onnxruntime; print('tinyaot', codegen.__version__, '| onnx', onnx.__version__, '| onnxruntime', onnxruntime.__version__)"
