#!/usr/bin/env bash
# The package as a newcomer gets it. Builds the wheel once (`pip wheel`),
# checks what its binaries need from the system, installs it into a fresh
# virtual environment with no compiler on PATH, and from a folder outside
# the source tree runs a 2-rank torch job, the same job on the second torch
# (unless TORCH_ALT_DIR is "none"), and a 2-rank TensorFlow job. Then `pip
# install .` of the tree, reusing the wheel's build folder, into the same
# environment.
# Usage: wheel_test.sh PYTHON SOURCE_DIR WORK_DIR BUILD_DIR TORCH_ALT_DIR
#                      [NAME=VALUE ...]
# NAME=VALUE: CMake settings for the build (CMAKE_BUILD_TYPE=... sets the
# build type). Given the build tree's, in a BUILD_DIR as deep as it, the
# compiler cache (ccache with a base_dir) serves the wheel's build.
set -euo pipefail
python=$1 source=$2 work=$3 build=$4 torch_alt=$5
shift 5
settings=(--config-settings=build-dir="$build")
for setting in "$@"; do
  case $setting in
    CMAKE_BUILD_TYPE=*) settings+=(--config-settings=cmake.build-type="${setting#*=}") ;;
    *) settings+=(--config-settings=cmake.define."$setting") ;;
  esac
done
[ "$torch_alt" != none ] || torch_alt=""
here=$(cd "$(dirname "$0")" && pwd)
# The interpreter itself, not a wrapper (pyenv's shims) that needs PATH.
python=$("$python" -c "import sys; print(sys.executable)")
original_path=$PATH
rm -rf "$work/dist" "$work/venv" "$work/run" "$work/no-compiler"
mkdir -p "$work/dist" "$work/run" "$work/no-compiler"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

# --no-build-isolation: build with the scikit-build-core already installed
# (no download); the persistent build folder makes a rerun incremental, and
# CMake takes CMAKE_<LANG>_COMPILER_LAUNCHER (ccache) from the environment.
start=$(date +%s)
"$python" -m pip wheel --no-build-isolation --no-deps --quiet \
  -w "$work/dist" "${settings[@]}" "$source"
echo "pip wheel took $(elapsed "$start")"
wheel=$(ls "$work"/dist/horovod-*.whl)
echo "wheel: $(basename "$wheel"), $(( $(stat -c %s "$wheel") / 1048576 )) MiB"
"$python" "$here/wheel_dependencies.py" "$wheel"

# From here on, PATH holds the environment and a few basic commands: no
# compiler, no linker.
"$python" -m venv --system-site-packages "$work/venv"
for tool in sh bash env cat grep head rm mkdir ls uname id sleep date cmp; do
  ln -s "$(command -v "$tool")" "$work/no-compiler/$tool"
done
export PATH="$work/venv/bin:$work/no-compiler"
for compiler in cc gcc g++ c++ clang ld; do
  if command -v "$compiler" >/dev/null; then
    echo "error: $compiler is on PATH"; exit 1
  fi
done
start=$(date +%s)
python -m pip install --no-deps --no-index --quiet "$wheel"
echo "pip install of the wheel took $(elapsed "$start")"

cd "$work/run"
unset PYTHONPATH
[ "$(command -v horovodrun)" = "$work/venv/bin/horovodrun" ]
python -c "import horovod.torch as hvd; print(hvd.__file__)" \
  | grep -q "^$work/venv/lib/"
horovod-info > info.txt || { cat info.txt; exit 1; }
grep -Eq "transport\.intra +shm +loads \(used\)" info.txt || { cat info.txt; exit 1; }
grep -Eq "transport\.inter +tcp +loads \(used\)" info.txt || { cat info.txt; exit 1; }
horovodrun --check-build | cmp - info.txt

job() {  # job LOG COMMAND...: a 2-rank job that must train on both ranks
  local log=$1; shift
  horovodrun -np 2 --start-timeout 60 "$@" > "$log" 2>&1 || { cat "$log"; exit 1; }
  cat "$log"
  grep -q "rank 0: .*loss" "$log"
  grep -q "rank 1: .*loss" "$log"
}
job torch.log python "$here/torch_train.py"
if [ -n "$torch_alt" ]; then
  PYTHONPATH=$torch_alt job torch-alt.log python "$here/torch_train.py"
  alt=$(PYTHONPATH=$torch_alt python -c "import torch; print(torch.__version__.split('+')[0])")
  [ "$(grep -c "torch $alt," torch-alt.log)" = 2 ] || {
    echo "error: the job did not run on torch $alt"; exit 1; }
fi
TF_CPP_MIN_LOG_LEVEL=2 job tensorflow.log python "$here/tensorflow_train.py"
echo "wheel installed without a compiler; torch and TensorFlow jobs: ok"

# `pip install .` still works (the compiler is back; the build is reused).
export PATH="$work/venv/bin:$original_path"
start=$(date +%s)
python -m pip install --no-build-isolation --no-deps --force-reinstall \
  --quiet "${settings[@]}" "$source"
echo "pip install . (build reused) took $(elapsed "$start")"
horovodrun -np 2 --start-timeout 60 python "$here/torch_train.py" > again.log 2>&1 \
  || { cat again.log; exit 1; }
grep -q "rank 1: .*loss" again.log
echo "pip install .: ok"
