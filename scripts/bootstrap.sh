#!/usr/bin/env bash
# Installs everything chute needs on a fresh Debian 12 machine and builds chute into .venv.
# Idempotent: a second run installs nothing new and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev clang-format
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev libdeflate-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libbz2-dev liblzf-dev libaec-dev  # HDF5 filters: bzip2, LZF, szip
  libgtest-dev libgmock-dev libbenchmark-dev libhdf5-dev libcurl4-openssl-dev nginx-light libnginx-mod-http-echo libopenmpi-dev openmpi-bin liburing-dev
  python3 python3-venv python3-dev python3-torch python3-mpi4py
  libssl-dev libexpat1-dev openssl  # openssl: the HTTPS test server's self-signed certificate
)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# pip_env DIR REQUIREMENTS [venv flags]: a virtual environment kept in step with a requirements file.
pip_env() {
  local dir=$1 requirements=$2
  shift 2
  [ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv "$@" "$dir"
  local want
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ "$(cat "$dir/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: installing Python packages into $dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
    echo "$want" >"$dir/.requirements.sha256"
  fi
}
# Debian's python3-torch (the CPU build) is seen through --system-site-packages.
pip_env .venv python/requirements.txt --system-site-packages
pip_env .venv-zarr2 python/requirements-zarr2.txt
pip_env .venv-numpy2 python/requirements-numpy2.txt
pip_env .venv-anemoi python/requirements-anemoi.txt

echo "bootstrap: building chute (C++ library, CLI and Python package)"
# A persistent build folder (build/py) keeps rebuilds incremental; a plain `pip install .` builds in
# a temporary folder instead. The development build links Open MPI when it is there (the MPI tests).
.venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  --config-settings=build-dir=build/py --config-settings=cmake.define.CHUTE_WITH_MPI=AUTO .
