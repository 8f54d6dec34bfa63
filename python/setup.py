"""Builds wgc's extension module with CMake (the repository above this folder) and puts it, libwgc,
Dawn, SwiftShader and the built-in model into the package (python/CMakeLists.txt, component
`python`). Metadata is in pyproject.toml.

Environment:
  WGC_BUILD_DIR  a CMake build tree of this repository already configured (scripts/build.sh's
                 build/): only the extension is built there and installed from it. Default: a
                 fresh tree in python/build/cmake (Release, no tests, no benchmarks).
  WGC_DEPS       where scripts/setup.sh put Dawn and SwiftShader (default: <repo>/.deps).
"""

import os
import pathlib
import re
import subprocess
import sys
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


class Terminal:
    """Progress on the user's terminal: pip shows a build's output only with -v (otherwise
    "still running..." for many minutes), so the stages and the compile's percentage go to
    /dev/tty directly. Nothing where there is no terminal (CI logs get the full output with -v)."""

    def __init__(self):
        try:
            self.tty = open("/dev/tty", "w")
        except OSError:
            self.tty = None
        self.start = time.monotonic()
        self.open_line = False

    def line(self, text, *, final=True):
        if not self.tty:
            return
        elapsed = int(time.monotonic() - self.start)
        self.tty.write(f"\r\033[Kwgc: {text} ({elapsed // 60}:{elapsed % 60:02d})" + ("\n" if final else ""))
        self.tty.flush()
        self.open_line = not final

    def close(self):
        if self.tty and self.open_line:
            self.tty.write("\n")
        self.open_line = False


TERMINAL = Terminal()


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (REPO / "CMakeLists.txt").exists():
            sys.exit(f"wgc: {REPO} is not the wgc repository: build the package from a clone (pip install ./python)")
        deps = pathlib.Path(os.environ.get("WGC_DEPS") or REPO / ".deps")
        if not (deps / "dawn" / "lib" / "libwebgpu_wrapper.so").exists():
            sys.exit(f"wgc: Dawn is not in {deps}: run scripts/setup.sh first (it fetches Dawn and SwiftShader)")
        jobs = str(os.cpu_count() or 2)
        given = os.environ.get("WGC_BUILD_DIR")
        build = pathlib.Path(given) if given else HERE / "build" / "cmake"
        if not given:
            TERMINAL.line("configuring the build (CMake; from scratch the whole build takes about 12 minutes "
                          "on 2 cores, pip -v shows every step)")
            self._cmake("-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DWGC_BUILD_TESTS=OFF",
                        "-DWGC_BUILD_BENCH=OFF", "-DWGC_BUILD_PYTHON=ON", f"-DWGC_DEPS={deps}",
                        f"-DPython_EXECUTABLE={sys.executable}")
        elif not (build / "CMakeCache.txt").exists():
            sys.exit(f"wgc: WGC_BUILD_DIR={build} is not a configured CMake build tree")
        self._cmake("--build", str(build), "--target", "_wgc", "-j", jobs, progress="compiling libwgc and the extension")
        # The extension lands in <prefix>/wgc, libwgc, Dawn and SwiftShader in <prefix>/wgc/lib, the
        # model in <prefix>/wgc/share/wgc: prefix = where setuptools collects the package.
        prefix = pathlib.Path(self.get_ext_fullpath(ext.name)).parent.parent
        TERMINAL.line("putting libwgc, Dawn, SwiftShader and the built-in model into the package")
        self._cmake("--install", str(build), "--component", "python", "--prefix", str(prefix))
        if not pathlib.Path(self.get_ext_fullpath(ext.name)).exists():
            sys.exit(f"wgc: the build did not make {self.get_ext_filename(ext.name)} (is pybind11-dev installed, "
                     "for the same Python as this pip?)")

    def _cmake(self, *args, progress=None):
        print("cmake", " ".join(args), flush=True)
        if not progress:
            subprocess.run(["cmake", *args], check=True)
            return
        # The output as always (pip -v shows it), and its "[ 42%]" on the terminal.
        with subprocess.Popen(["cmake", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace") as p:
            for line in p.stdout:
                print(line, end="", flush=True)
                m = re.match(r"\[\s*(\d+)%\]", line)
                if m:
                    TERMINAL.line(f"{progress}: {m.group(1)}%", final=False)
        TERMINAL.close()
        if p.returncode:
            raise subprocess.CalledProcessError(p.returncode, ["cmake", *args])


setup(ext_modules=[Extension("wgc._wgc", sources=[])], cmdclass={"build_ext": CMakeBuild})
