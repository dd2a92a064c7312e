#!/usr/bin/env bash
# pip-installs the repository into a fresh virtual environment and runs a
# two-rank training job with the `horovodrun` it installed, from a folder
# outside the repository (so only the installed package can be imported).
# Usage: pip_install_test.sh PYTHON SOURCE_DIR WORK_DIR TRAIN_SCRIPT
set -euo pipefail
python=$1 source=$2 work=$3 train=$4
rm -rf "$work/venv" "$work/run"
mkdir -p "$work/run" "$work/pip-build"
"$python" -m venv --system-site-packages "$work/venv"
# --no-build-isolation: build with the scikit-build-core already installed
# (no download); the persistent build dir makes a rerun incremental.
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$work/venv/bin/python" -m pip install --no-build-isolation --no-deps \
  --quiet --config-settings=build-dir="$work/pip-build" "$source"
echo "pip install took $(( $(date +%s) - start )) s"
cd "$work/run"
export PATH="$work/venv/bin:$PATH"
unset PYTHONPATH
command -v horovodrun | grep -q "^$work/venv/bin/horovodrun$"
python -c "import horovod.torch as hvd, os; print('installed at', os.path.dirname(hvd.__file__))" \
  | grep -q "$work/venv/lib/"
horovodrun --check-build > check-build.txt
horovodrun -np 2 --start-timeout 60 python "$train" > train.log 2>&1 || {
  cat train.log; exit 1; }
cat train.log
grep -q "rank 0: loss" train.log
grep -q "rank 1: loss" train.log
echo "pip install and horovodrun -np 2 python train.py: ok"
