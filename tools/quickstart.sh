#!/usr/bin/env bash
# Sets up a fresh Debian or Ubuntu machine for heat and builds it, then runs
# the built-in default deck (`run`, the default) or the whole test suite
# (`test`). Installs only the packages that are missing, with sudo when not
# root. Safe to run again.
#
#   tools/quickstart.sh run     # build, then heat run on the default deck
#   tools/quickstart.sh test    # build, then ctest, then ctest of a sanitizer
#                               # build (AddressSanitizer, UBSan): what CI runs
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
case "$mode" in
  run|test) ;;
  *) echo "usage: tools/quickstart.sh [run|test]" >&2; exit 2 ;;
esac

# Debian package names; gcc brings OpenMP (libgomp). Open MPI and the HDF5
# built on it let heat run over several processes (mpirun -np N heat run ...),
# each rank writing its part of one file; the serial HDF5 stays beside it.
# The Python ones are for tools/heat_plot.py and the ParaView, plot, restart
# and MPI tests (pvpython comes with python3-paraview; it needs none of the
# packages it only recommends).
packages=(build-essential cmake pkg-config libhdf5-dev libconfig-dev libcmocka-dev
          libopenmpi-dev openmpi-bin libhdf5-openmpi-dev
          python3-h5py python3-matplotlib python3-paraview)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  echo "quickstart: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"

if [ "$mode" = run ]; then
  # The default deck writes to out/default; rerunning the quick start replaces it.
  build/heat run --overwrite
  echo "quickstart: done; see out/default/ (open default.xmf in ParaView, or"
  echo "  tools/heat_plot.py history out/default/history.csv -o history.png) and 'build/heat --help'"
else
  ctest --test-dir build --output-on-failure -j"$jobs"
  # The whole CPU suite again, built with AddressSanitizer and
  # UndefinedBehaviorSanitizer (every error fatal), in build-sanitize/.
  echo "quickstart: the test suite again under AddressSanitizer and UndefinedBehaviorSanitizer"
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEAT_SANITIZE=ON -DHEAT_CUDA=OFF
  cmake --build build-sanitize -j"$jobs"
  ctest --test-dir build-sanitize --output-on-failure -j"$jobs"
fi
