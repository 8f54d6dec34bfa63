"""docs/python.md's examples run as written and print what their comments say."""
import contextlib
import io
import pathlib
import re

import numpy as np
import wgc

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_shader_error_example_raises_shader_error_at_the_line_it_says():
    block = next(b for b in python_blocks() if "except wgc.ShaderError" in b)
    want = re.search(r"#\s*(\d+ \d+)\s*$", block, re.M).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(block, {"wgc": wgc, "np": np})  # a ValueError (a mistake in the call) would fail here
    assert out.getvalue().strip() == want
