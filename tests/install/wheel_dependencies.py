"""Checks what the wheel's binaries need from the system (their ELF NEEDED
entries): the core, the shm and tcp transports, the reducers and the tools
need nothing beyond glibc, libstdc++/libgcc_s and what the wheel carries;
horovod.tensorflow's op library also TensorFlow's framework library; the
optional transports and the CUDA kernels (opened by the core only where
CUDA is present) may name their system libraries (reported, not failed).
Usage: wheel_dependencies.py WHEEL"""

import os
import re
import struct
import sys
import zipfile

GLIBC = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
         "librt.so.1", "libutil.so.1", "ld-linux-x86-64.so.2"}
CXX_RUNTIME = {"libstdc++.so.6", "libgcc_s.so.1"}
# Libraries built on a system library the user's machine may lack: the
# plugins, and the CUDA kernels the core opens on demand.
OPTIONAL = re.compile(
    r"libhorovod-(transport-(mpi|ucx|ofi|gloo|nccl)|cuda-kernels)\.so$")
FRAMEWORK = {"libhorovod_tensorflow.so": {"libtensorflow_framework.so.2"}}

SHT_DYNAMIC, DT_NULL, DT_NEEDED = 6, 0, 1


def needed(data):
    """The DT_NEEDED names of a 64-bit little-endian ELF file, or None for
    anything else."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, _ in sections:
        if kind != SHT_DYNAMIC:
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                end = data.index(b"\0", strtab + value)
                names.append(data[strtab + value:end].decode())
    return names


def main(wheel):
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
    carried = {os.path.basename(n) for n in files}
    failures, checked = [], 0
    for name, data in sorted(files.items()):
        libraries = needed(data)
        if libraries is None:
            continue
        base = os.path.basename(name)
        external = sorted(set(libraries) - GLIBC - CXX_RUNTIME - carried)
        if OPTIONAL.search(base):
            print(f"optional  {name}: needs {', '.join(external) or 'nothing more'}")
            continue
        checked += 1
        unexpected = [lib for lib in external
                      if lib not in FRAMEWORK.get(base, set())]
        print(f"{'BAD' if unexpected else 'ok':9} {name}"
              + (f": needs {', '.join(external)}" if external else ""))
        if unexpected:
            failures.append(f"{name} needs {', '.join(unexpected)}")
    if checked == 0:
        failures.append("no binaries found in the wheel")
    for f in failures:
        print(f"error: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
