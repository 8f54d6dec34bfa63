"""Shared by the wgc package's tests: data, references and fixture paths.

Run them against an installed package (pip install ./python) or the build tree
(PYTHONPATH=build/python). Fixtures: $WGC_FIXTURES (default ../shared/fixtures beside the
repository), as the C++ tests; tests that need absent files skip, saying which.
"""

import json
import os
import pathlib
import struct

import numpy as np
import pytest

import wgc

REPO = pathlib.Path(__file__).resolve().parents[2]


def fixtures_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("WGC_FIXTURES") or REPO.parent / "shared" / "fixtures")


def deps_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("WGC_DEPS") or REPO / ".deps")


def require(path: pathlib.Path) -> pathlib.Path:
    if not path.exists():
        pytest.skip(f"{path} is not here (set WGC_FIXTURES / WGC_DEPS, or run scripts/setup_test_refs.sh)")
    return path


def rel_error(got, want) -> float:
    """max |got - want| / max |want| (infinite when shapes differ or got has a NaN where want has none)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if np.any(~np.isfinite(got) & np.isfinite(want)):
        return float("inf")
    return float(np.max(np.abs(got - want), initial=0.0) / max(np.max(np.abs(want), initial=0.0), 1e-30))


def read_safetensors(path: pathlib.Path) -> dict:
    """name -> NumPy array of a .safetensors file (F32 and I32 tensors)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": np.float32, "I32": np.int32}[t["dtype"]]
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dt).reshape(t["shape"])
    return out


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="session")
def ctx():
    return wgc.default_context()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def tiny_llm():
    """The built-in model (shared: loading it costs a second on SwiftShader)."""
    return wgc.LLM(max_ctx=256)
