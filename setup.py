"""Builds the attune Python package with CMake (python/CMakeLists.txt): `pip install .`.

The extension attune._native is the CMake target attune_python, built for the interpreter that
runs pip; `cmake --install --component python` then lays the module, the attune CLI, its CUDA
plugin and libattune-rt into the package directory. Environment (default in brackets):
    ATTUNE_CMAKE_BUILD_DIR  an already configured and built tree to install from, instead of
                            configuring and building one under build/ here [none]
    ATTUNE_CMAKE_ARGS       extra arguments for the configure step [none]
    ATTUNE_BUILD_JOBS       parallel build jobs [os.cpu_count()]
"""

import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        package_dir = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = os.environ.get("ATTUNE_CMAKE_BUILD_DIR")
        if not build_dir:
            build_dir = str(ROOT / "build" / f"pip-py{sys.version_info[0]}{sys.version_info[1]}")
            configure = ["cmake", "-S", str(ROOT), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                         "-DATTUNE_BUILD_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            configure += shlex.split(os.environ.get("ATTUNE_CMAKE_ARGS", ""))
            subprocess.run(configure, check=True)
            targets = ["attune_python", "attune"]
            cache = (pathlib.Path(build_dir) / "CMakeCache.txt").read_text()
            if "ATTUNE_WITH_CUDA:BOOL=ON" in cache:
                targets.append("attune_cuda")
            jobs = os.environ.get("ATTUNE_BUILD_JOBS", str(os.cpu_count() or 1))
            subprocess.run(["cmake", "--build", build_dir, "-j", jobs, "--target", *targets],
                           check=True)
        subprocess.run(["cmake", "--install", build_dir, "--component", "python", "--prefix",
                        str(package_dir)], check=True)
        if not pathlib.Path(self.get_ext_fullpath(ext.name)).exists():
            sys.exit(f"setup.py: {build_dir} holds no attune._native for this Python "
                     f"({sys.version.split()[0]}); configure it with -DPython3_EXECUTABLE="
                     f"{sys.executable}")


setup(
    packages=["attune"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("attune._native")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    # setuptools' own staging beside CMake's trees, not in the source tree.
    options={"build": {"build_base": str(ROOT / "build" / "setuptools")},
             "egg_info": {"egg_base": str(ROOT / "build")}},
)
