"""wgc.cnn against PyTorch's logits for the mobilenet_v2_035 fixture (../shared/fixtures)."""

import numpy as np
import pytest

import wgc
from conftest import fixtures_dir, rel_error, require


def fixture(name):
    return require(fixtures_dir() / "mobilenet_v2_035" / name)


@pytest.fixture(scope="module")
def mobilenet():
    return wgc.cnn.Model(fixture("mobilenet_v2_035.onnx"))


@pytest.mark.parametrize("device", ["auto", "gpu", "cpu"])
def test_mobilenet_matches_pytorch(device):
    x = np.load(fixture("mobilenet_v2_035.input.npy"))
    want = np.load(fixture("mobilenet_v2_035.logits.npy"))
    m = wgc.cnn.Model(fixture("mobilenet_v2_035.onnx"), device=device)
    if device != "auto":
        assert m.on_gpu(x) == (device == "gpu")
    got = m(x)
    assert got.shape == (2, 1000) and got.dtype == np.float32
    assert rel_error(got, want) < 1e-3  # Winograd rungs may run on the GPU path
    # The part that depends on the image, so a backbone error cannot hide behind the bias.
    assert rel_error(got[0] - got[1], want[0] - want[1]) < 1e-3
    assert [i for i, _, _ in wgc.cnn.top_k(got[0], 5)] == list(np.argsort(-want[0], kind="stable")[:5])


def test_model_facts_and_a_batch_of_one(mobilenet):
    (name, dtype, shape), = mobilenet.inputs
    assert name == "input" and dtype == "float32" and shape[1:] == (3, 224, 224)
    assert mobilenet.outputs[0][0] == "logits"
    x = np.load(fixture("mobilenet_v2_035.input.npy"))[1:]
    want = np.load(fixture("mobilenet_v2_035.logits.npy"))[1:]
    assert rel_error(mobilenet.run(x)[0], want) < 1e-3


def test_bad_inputs(mobilenet, tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        wgc.cnn.Model(tmp_path / "nothing.onnx")
    with pytest.raises(TypeError, match="float32, got float64"):
        mobilenet(np.zeros((1, 3, 224, 224)))
    with pytest.raises(ValueError, match=r"must have shape \(\?, 3, 224, 224\), got \(1, 4, 224, 224\)"):
        mobilenet(np.zeros((1, 4, 224, 224), np.float32))
    with pytest.raises(ValueError, match="takes 1 input"):
        mobilenet.run()
    with pytest.raises(ValueError, match="device"):
        wgc.cnn.Model(fixture("mobilenet_v2_035.onnx"), device="tpu")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07garbage")
    with pytest.raises(wgc.Error, match="junk.onnx"):
        wgc.cnn.Model(junk)


def test_imagenet_preprocessing_and_top_k():
    gray = np.full((300, 400, 3), 128, np.uint8)
    x = wgc.cnn.imagenet_input(gray)
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(x[0, :, 100, 100], (128 / 255 - mean) / std, rtol=1e-5)
    logits = np.array([0.5, 3.0, -1.0, 2.0], np.float32)
    best = wgc.cnn.top_k(logits, 2)
    p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert [b[0] for b in best] == [1, 3]
    np.testing.assert_allclose([b[1] for b in best], p[[1, 3]], rtol=1e-5)
    with pytest.raises(TypeError, match="uint8"):
        wgc.cnn.imagenet_input(np.zeros((4, 4, 3), np.float32))
