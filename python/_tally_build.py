"""_tally_build.py — the PEP 517 build backend of `pip install ./python`, in the tree, so that
pip downloads nothing.

pip builds a package with a pyproject.toml in an isolated environment into which it installs
the package's build requirements, from the network. This backend requires nothing: it runs
`setup.py build_ext` (setup.py says what is compiled) with the setuptools already installed
where pip runs (the virtualenv's own, or the base interpreter's), found even from inside the
isolated environment, and writes the wheel itself, so that the `wheel` package is not needed
either (setuptools < 70 needs it for bdist_wheel, and a fresh virtualenv has none).
"""

import base64
import csv
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAME = "tally"


def _version():
    with open(os.path.join(ROOT, "include", "tally.h")) as f:
        text = f.read()
    return ".".join(re.search(rf"#define TALLY_VERSION_{k}\s+(\d+)", text).group(1)
                    for k in ("MAJOR", "MINOR", "PATCH"))


def _outside_path():
    """The sys.path this interpreter has outside pip's isolated environment (its virtualenv's
    site folder, the system's when the virtualenv includes it): setup.py imports setuptools,
    and torch to find its headers, from there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    p = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                       env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if p.returncode != 0:
        return []
    return [d for d in json.loads(p.stdout) if d and os.path.isdir(d)]


def _tags():
    impl = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    abi = impl + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, abi, plat


def _build_extensions(out):
    paths = _outside_path()
    if not any(os.path.isdir(os.path.join(d, "setuptools")) for d in paths):
        raise RuntimeError(
            "tally: building needs setuptools where pip runs (" + sys.executable + " has none); "
            "install it (pip install setuptools, or Debian's python3-setuptools) and run pip "
            "again")
    tmp = tempfile.mkdtemp(prefix="tally-build-")
    setup = os.path.join(HERE, "setup.py")
    argv = [setup, "build_ext", "--build-lib", out, "--build-temp", tmp]
    # sys.path is extended after start-up: pip's sitecustomize drops site folders named in
    # PYTHONPATH
    code = (f"import runpy, sys; sys.path += {paths!r}; sys.argv = {argv!r}; "
            f"runpy.run_path({setup!r}, run_name='__main__')")
    try:
        subprocess.run([sys.executable, "-c", code], cwd=HERE, check=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [arcname, f"sha256={digest}", str(len(data))]


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: A low-overhead profiler for deep-learning workloads: ranges, steps, "
            "schedules and PyTorch operators from Python; reports for any trace\n"
            "Requires-Python: >=3.8\n")


def _dist_info_files(version, tag):
    return {
        "METADATA": _metadata(version),
        "WHEEL": (f"Wheel-Version: 1.0\nGenerator: {NAME} _tally_build\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n"),
        "top_level.txt": f"{NAME}\n",
    }


# ---- PEP 517 hooks --------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    impl, abi, plat = _tags()
    info = f"{NAME}-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, text in _dist_info_files(version, f"{impl}-{abi}-{plat}").items():
        with open(os.path.join(metadata_directory, info, name), "w") as f:
            f.write(text)
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    impl, abi, plat = _tags()
    tag = f"{impl}-{abi}-{plat}"
    out = tempfile.mkdtemp(prefix="tally-lib-")
    try:
        _build_extensions(out)
        files = {}  # arcname -> bytes
        for path in sorted(glob.glob(os.path.join(HERE, NAME, "*.py"))):
            with open(path, "rb") as f:
                files[f"{NAME}/{os.path.basename(path)}"] = f.read()
        for path in sorted(glob.glob(os.path.join(out, NAME, "*.so"))):
            with open(path, "rb") as f:
                files[f"{NAME}/{os.path.basename(path)}"] = f.read()
        info = f"{NAME}-{version}.dist-info"
        for name, text in _dist_info_files(version, tag).items():
            files[f"{info}/{name}"] = text.encode()
        wheel = f"{NAME}-{version}-{tag}.whl"
        rows = [_record_line(a, d) for a, d in files.items()] + [[f"{info}/RECORD", "", ""]]
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        files[f"{info}/RECORD"] = buf.getvalue().encode()
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                             zipfile.ZIP_DEFLATED) as z:
            for arcname, data in files.items():
                zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                zi.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
                zi.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(zi, data)
        return wheel
    finally:
        shutil.rmtree(out, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("tally: python/ alone is no source distribution (the C sources are in the "
                       "repository around it): install from a checkout with pip install ./python")
