"""What the example tests share: a reference run of an example as a job of
its own, and the accuracy line the examples print."""
import os
import re
import subprocess
import sys

ACCURACY = re.compile(r"ranks (\d+): final test accuracy ([0-9.]+)%")


def single_rank_job(examples, script, *args):
    """Starts examples/script as a job of its own, of one rank (no
    launcher)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HOROVOD_", "OMPI_", "PMIX_"))}
    return subprocess.Popen([sys.executable, os.path.join(examples, script),
                             *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
