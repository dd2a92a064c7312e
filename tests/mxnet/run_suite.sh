#!/bin/sh
# Runs one horovod.mxnet suite under horovodrun from the MXNet virtual
# environment; exits 77 (ctest: SKIP) where that environment is absent.
# usage: run_suite.sh PYTHON HOROVODRUN NP SUITE
python=$1 horovodrun=$2 np=$3 suite=$4
# Found, not imported: importing MXNet takes seconds, and one that is
# present but fails to load must fail the test, not skip it.
if ! "$python" -c "import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, sys.argv[1:])))" \
    mxnet pytest sklearn >/dev/null 2>&1; then
  echo "no MXNet environment at $python (tools/install-deps makes it): skipped"
  exit 77
fi
exec "$horovodrun" -np "$np" --start-timeout 60 \
  "$python" -m pytest -q -p no:cacheprovider -o faulthandler_timeout=150 \
  "$suite"
