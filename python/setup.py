"""setup.py — `pip install ./python` (from the repository root) builds the tally package for the
interpreter that runs pip, from the repository's own C sources: nothing is downloaded.

What it builds is what python/CMakeLists.txt builds:
  tally._tally   the core extension: python/tally/_tally.c with the recorder and collectors
                 (src/record, src/collect), the analysis library (src/trace, src/analysis,
                 src/report) and the command line (src/cli, examples/llama for `tally demo`, its
                 main renamed), hidden except for the entry points in python/tally/exports.map
  tally._torch   the PyTorch shim (C++17), only where the interpreter imports torch and torch's
                 headers are installed with it; otherwise one line says why and it is skipped

There is deliberately no pyproject.toml: with one, pip builds in an isolated environment and
downloads setuptools into it, which fails offline. Without one, pip uses the setuptools already
installed beside it (Debian's python3 -m venv puts one in every virtual environment). Where pip
finds no setuptools (Python 3.12's venv), install it once, or build with the interpreter's own:
`pip install --no-build-isolation ./python`. Needs a C compiler, Python's headers (python3-dev),
zlib's (zlib1g-dev) and SQLite's (libsqlite3-dev).
"""

import glob
import os
import re

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def say(line):
    print(f"tally: {line}", flush=True)


def version():
    with open(os.path.join(ROOT, "include", "tally.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define TALLY_VERSION_{k}\s+(\d+)", text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def sources(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, p)))
    return out


def cuda_include():
    """CUDA's headers (NVTX, CUPTI): the collectors that need them are built when found, as in
    the top-level CMakeLists.txt."""
    found = {}
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", "/usr/local/cuda-13.0"]
    for r in filter(None, roots):
        for name, header in (("NVTX", "nvtx3/nvToolsExt.h"), ("CUPTI", "cupti.h")):
            for d in (os.path.join(r, "include"), os.path.join(r, "extras", "CUPTI", "include")):
                if name not in found and os.path.exists(os.path.join(d, header)):
                    found[name] = d
    return found


def core_extension():
    cuda = cuda_include()
    macros = [("_GNU_SOURCE", None), ("main", "tally_cli_main"), ("TALLY_CLI_IN_MODULE", None)]
    macros += [(f"TALLY_HAVE_{name}", "1") for name in sorted(cuda)]
    return Extension(
        "tally._tally",
        sources=[os.path.join(HERE, "tally", "_tally.c")]
        + sources("src/record/*.c", "src/collect/*.c", "src/trace/*.c", "src/analysis/*.c",
                  "src/report/*.c", "src/cli/*.c", "examples/llama/*.c"),
        include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src"),
                      os.path.join(HERE, "tally"), os.path.join(ROOT, "examples", "llama")]
        + sorted(set(cuda.values())),
        define_macros=macros,
        extra_compile_args=["-std=gnu11", "-fvisibility=hidden"],
        extra_link_args=["-Wl,--version-script=" + os.path.join(HERE, "tally", "exports.map")],
        libraries=["z", "sqlite3", "m", "dl", "pthread"],
    )


def torch_extension():
    src = os.path.join(HERE, "tally", "_torch.cpp")
    if not os.path.exists(src):
        say("tally._torch (PyTorch operators) is not built: python/tally/_torch.cpp is missing")
        return None
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any failure to import means no shim
        say(f"tally._torch (PyTorch operators) is not built: torch cannot be imported ({e})")
        return None
    base = os.path.dirname(torch.__file__)
    inc, lib = os.path.join(base, "include"), os.path.join(base, "lib")
    api = os.path.join(inc, "torch", "csrc", "api", "include")
    if not os.path.isdir(api) or not glob.glob(os.path.join(lib, "libc10.*")):
        say(f"tally._torch (PyTorch operators) is not built: no torch headers under {inc}")
        return None
    abi = int(torch.compiled_with_cxx11_abi())
    say(f"tally._torch builds against torch {torch.__version__} ({base})")
    return Extension(
        "tally._torch",
        sources=[src],
        language="c++",
        include_dirs=[inc, api, os.path.join(ROOT, "include"), os.path.join(HERE, "tally")],
        define_macros=[("_GLIBCXX_USE_CXX11_ABI", str(abi))],
        extra_compile_args=["-std=c++17", "-fvisibility=hidden"],
        library_dirs=[lib],
        libraries=["c10", "torch_cpu"],
        runtime_library_dirs=[lib],
    )


exts = [core_extension()]
shim = torch_extension()
if shim is not None:
    exts.append(shim)

setup(
    name="tally",
    version=version(),
    description="A low-overhead profiler for deep-learning workloads: ranges, steps, "
    "schedules and PyTorch operators from Python; reports for any trace",
    packages=["tally"],
    package_dir={"tally": os.path.relpath(os.path.join(HERE, "tally"))},
    ext_modules=exts,
    python_requires=">=3.8",
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
    zip_safe=False,
)
