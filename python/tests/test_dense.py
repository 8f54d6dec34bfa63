"""wgc.cnn beyond classifiers: segmentation, detection, super-resolution and a BERT-style encoder
with the models of the C++ test_dense_models ($WGC_DENSE_MODELS or ../shared/fixtures/dense, made by
scripts/export_dense_models.py), against PyTorch's float64 outputs and the library's own helpers."""

import os
import pathlib

import numpy as np
import pytest

import wgc
from conftest import fixtures_dir, rel_error, require


def dense(name):
    d = pathlib.Path(os.environ.get("WGC_DENSE_MODELS") or fixtures_dir() / "dense")
    return require(d / name)


def image():
    y, x = np.mgrid[0:41, 0:57]
    img = np.stack([x * 4, y * 6, np.full_like(x, 30)], -1).astype(np.uint8)
    img[10:25, 20:35, 2] = 250
    return img


def test_bert_ids_and_mask_as_integer_arrays():
    m = wgc.cnn.Model(dense("bert.onnx"), device="cpu")
    ids, mask, types = (np.load(dense(f"bert.in{k}.npy")) for k in range(3))
    want = np.load(dense("bert.out0.npy"))
    assert rel_error(m.run(ids, mask, types)[0], want) < 1e-4
    # Any integer or bool dtype for integer inputs.
    assert rel_error(m.run(ids.astype(np.int32), mask.astype(bool), types.astype(np.uint8))[0], want) < 1e-4
    with pytest.raises(TypeError, match="integer array"):
        wgc.cnn.Model(dense("espcn.onnx"), device="cpu").run(np.zeros((1, 1, 4, 4), np.int64))


def test_segment():
    m = wgc.cnn.Model(dense("lraspp_mobilenet_v3_large.onnx"), device="cpu")
    classes, overlay = wgc.cnn.segment(m, image(), size=48)
    assert classes.dtype == np.int32 and classes.shape == (48, 67)
    assert overlay.shape == (41, 57, 3) and overlay.dtype == np.uint8
    x = wgc.cnn._wgc.image_tensor(image(), 67, 48, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    np.testing.assert_array_equal(classes, np.argmax(m(x)[0], 0))
    assert wgc.cnn.class_colour(15) == (192, 128, 128)


def test_detect_and_draw():
    m = wgc.cnn.Model(dense("ssdlite320_mobilenet_v3_large_head.onnx"), device="cpu")
    anchors = np.load(dense("ssdlite320_mobilenet_v3_large_head.anchors.npy"))
    dets = wgc.cnn.detect(m, image(), anchors, score=0.05, max_detections=5)
    assert 0 < len(dets) <= 5
    assert all(d["score"] >= 0.05 for d in dets)
    assert [d["score"] for d in dets] == sorted((d["score"] for d in dets), reverse=True)
    for d in dets:
        x1, y1, x2, y2 = d["box"]
        assert 0 <= x1 <= x2 <= 57 and 0 <= y1 <= y2 <= 41
    drawn = wgc.cnn.draw_detections(image(), dets)
    assert drawn.shape == (41, 57, 3) and (drawn != image()).any()


def test_upscale():
    m = wgc.cnn.Model(dense("espcn.onnx"), device="cpu")
    big = wgc.cnn.upscale(m, image())
    assert big.shape == (123, 171, 3) and big.dtype == np.uint8
