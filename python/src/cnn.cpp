// wgc.cnn.Model: an ONNX image model (src/cnn) run on NumPy arrays.
#include "common.h"

#include "cnn/imagenet.h"
#include "cnn/model.h"
#include "cnn/vision.h"
#include "io/image.h"
#include "util/error.h"

#include <filesystem>

namespace wgc::python {
namespace {

py::array image_to_numpy(const Image& img);

class PyCnnModel {
 public:
  PyCnnModel(ContextPtr ctx, const std::string& path, const std::string& device) : ctx_(std::move(ctx)) {
    cnn::ModelOptions o;
    try {
      o.device = cnn::parse_device(device);
    } catch (const Error& e) {
      throw py::value_error(std::string("wgc.cnn.Model: device: ") + e.what());
    }
    DeviceLock lock(*ctx_);
    model_ = std::make_shared<cnn::Model>(ctx_->ctx(), path, o);
  }
  ~PyCnnModel() {
    if (model_) ctx_->dispose(std::move(model_));
  }
  PyCnnModel(const PyCnnModel&) = delete;
  PyCnnModel& operator=(const PyCnnModel&) = delete;

  // One array per graph input (float32, or int64 for integer inputs); every output.
  py::list run(const py::sequence& arrays) {
    std::vector<cnn::HostTensor> host = host_inputs(arrays);
    std::vector<cnn::HostTensor> out;
    {
      DeviceLock lock(*ctx_);
      out = model_->run(host);
    }
    py::list r;
    for (auto& t : out) r.append(to_numpy(std::move(t)));
    return r;
  }

  // Super-resolution of an image (cnn/vision.h): the model's input channels say luma or RGB.
  py::array upscale(const Image& img) {
    const auto& in = model_->graph().inputs;
    if (in.size() != 1)
      throw py::value_error("wgc.cnn.upscale: the model takes " + std::to_string(in.size()) + " inputs, not 1");
    int channels = in[0].has_shape && in[0].dims.size() == 4 && in[0].dims[1] > 0 ? int(in[0].dims[1]) : 3;
    Image big;
    {
      DeviceLock lock(*ctx_);  // the GIL released while the model runs
      big = cnn::upscale(img, channels, [&](const cnn::HostTensor& x) { return model_->run(x); });
    }
    return image_to_numpy(big);
  }

  bool on_gpu(const py::sequence& arrays) {
    std::vector<cnn::HostTensor> host = host_inputs(arrays);
    DeviceLock lock(*ctx_);
    return model_->on_gpu(host);
  }

  py::list values(bool in) const {
    py::list r;
    for (const auto& v : in ? model_->graph().inputs : model_->graph().outputs) {
      py::object shape = py::none();
      if (v.has_shape) {
        py::list dims;
        for (int64_t d : v.dims) dims.append(d > 0 ? py::object(py::int_(d)) : py::object(py::none()));
        shape = py::tuple(dims);
      }
      r.append(py::make_tuple(v.name, std::string(cnn::onnx_type_name(v.elem_type)), shape));
    }
    return r;
  }

 private:
  std::vector<cnn::HostTensor> host_inputs(const py::sequence& arrays) const {
    const auto& inputs = model_->graph().inputs;
    if (arrays.size() != inputs.size())
      throw py::value_error("wgc.cnn.Model: the model takes " + std::to_string(inputs.size()) + " input(s), got " +
                            std::to_string(arrays.size()));
    std::vector<cnn::HostTensor> host;
    for (size_t i = 0; i < inputs.size(); ++i) host.push_back(to_host(arrays[i], inputs[i]));
    return host;
  }

  static cnn::HostTensor to_host(const py::handle& obj, const cnn::ValueInfo& info) {
    const std::string what = "wgc.cnn.Model: input '" + info.name + "'";
    if (!py::isinstance<py::array>(obj))
      throw py::type_error(what + " must be a NumPy array, got " +
                           py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
    auto a = py::reinterpret_borrow<py::array>(obj);
    Shape shape(a.shape(), a.shape() + a.ndim());
    if (info.has_shape) {  // the file's fixed dimensions (open ones are <= 0)
      bool fits = info.dims.size() == shape.size();
      for (size_t d = 0; fits && d < shape.size(); ++d) fits = info.dims[d] <= 0 || info.dims[d] == shape[d];
      if (!fits) {
        py::list dims;  // the file's shape, "?" for open dimensions, in Python's tuple notation
        for (int64_t dim : info.dims) dims.append(dim > 0 ? py::object(py::int_(dim)) : py::object(py::str("?")));
        std::string want = py::str(py::tuple(dims));
        for (size_t q; (q = want.find("'?'")) != std::string::npos;) want.replace(q, 3, "?");
        throw py::value_error(what + " must have shape " + want + ", got " +
                              py::repr(py::tuple(py::cast(std::vector<int64_t>(shape)))).cast<std::string>());
      }
    }
    char kind = a.dtype().kind();
    if (kind == 'i' || kind == 'u' || kind == 'b') {  // ids, masks: any integer or bool array
      if (!cnn::is_integer_type(info.elem_type))
        throw py::type_error(what + " is " + std::string(cnn::onnx_type_name(info.elem_type)) +
                             ", got an integer array");
      auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
      return cnn::HostTensor::ints(shape, std::vector<int64_t>(c.data(), c.data() + c.size()));
    }
    auto f = float_array(obj, what);
    return cnn::HostTensor(shape, std::vector<float>(f.data(), f.data() + f.size()));
  }

  static py::array to_numpy(cnn::HostTensor&& t) {
    std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
    if (!t.integer) return python::to_numpy(std::move(t.f), shape);
    py::array_t<int64_t> a(shape);
    std::copy(t.i.begin(), t.i.end(), a.mutable_data());
    return a;
  }

  ContextPtr ctx_;
  std::shared_ptr<cnn::Model> model_;
};

py::array image_to_numpy(const Image& img) {
  py::array_t<uint8_t> a(std::vector<py::ssize_t>{img.height, img.width, img.channels});
  std::copy(img.data.begin(), img.data.end(), a.mutable_data());
  return a;
}

// An 8-bit image from a file (PNG, JPEG) or a uint8 array (height, width[, channels]).
Image image_from(const py::object& src) {
  if (py::isinstance<py::str>(src) || py::hasattr(src, "__fspath__")) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(src));
    py::gil_scoped_release nogil;
    return read_image(path);
  }
  if (!py::isinstance<py::array>(src))
    throw py::type_error("wgc.cnn: give an image file or a uint8 array, got " +
                         py::str(py::type::of(src).attr("__name__")).cast<std::string>());
  auto a = py::reinterpret_borrow<py::array>(src);
  if (!a.dtype().equal(py::dtype::of<uint8_t>()))
    throw py::type_error("wgc.cnn: an image array must be uint8, got " +
                         py::str(static_cast<const py::object&>(a.dtype())).cast<std::string>());
  int64_t c = a.ndim() == 3 ? a.shape(2) : 1;
  if ((a.ndim() != 2 && a.ndim() != 3) || (c != 1 && c != 3 && c != 4) || a.size() == 0 ||
      a.shape(0) * a.shape(1) > kMaxImagePixels)
    throw py::value_error("wgc.cnn: an image is (height, width) or (height, width, 1|3|4), not empty");
  auto u = py::array_t<uint8_t, py::array::c_style>::ensure(a);
  Image img(int(u.shape(1)), int(u.shape(0)), int(c));
  std::copy(u.data(), u.data() + u.size(), img.data.begin());
  return img;
}

}  // namespace

void bind_cnn(py::module_& m) {
  m.def("imagenet_input", [](const py::object& src) {
    Image img = image_from(src);
    cnn::HostTensor t;
    {
      py::gil_scoped_release nogil;
      t = cnn::imagenet_input(img);
    }
    return python::to_numpy(std::move(t.f), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  });
  m.def("imagenet_classes", [] { return cnn::imagenet_classes(); });
  m.def("image_tensor",
        [](const py::object& src, int width, int height, std::array<float, 3> mean, std::array<float, 3> std) {
          Image img = image_from(src);
          cnn::HostTensor t;
          {
            py::gil_scoped_release nogil;
            t = cnn::image_tensor(img, width, height, mean, std);
          }
          return python::to_numpy(std::move(t.f), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
        });
  m.def("read_image", [](const py::object& src) { return image_to_numpy(image_from(src)); });
  m.def("class_map", [](const py::object& logits) {
    auto f = float_array(logits, "wgc.cnn.segment: logits");
    if (f.ndim() != 4 || f.shape(0) != 1) throw py::value_error("wgc.cnn.segment: logits must be [1, classes, h, w]");
    cnn::HostTensor t({f.shape(0), f.shape(1), f.shape(2), f.shape(3)},
                      std::vector<float>(f.data(), f.data() + f.size()));
    std::vector<int32_t> map = cnn::class_map(t);
    py::array_t<int32_t> a(std::vector<py::ssize_t>{f.shape(2), f.shape(3)});
    std::copy(map.begin(), map.end(), a.mutable_data());
    return a;
  });
  m.def("overlay_classes", [](const py::object& src, const py::array& map, float alpha) {
    Image img = image_from(src);
    auto m32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(map);
    if (!m32 || m32.ndim() != 2) throw py::value_error("wgc.cnn.segment: the class map must be (h, w)");
    return image_to_numpy(cnn::overlay_classes(img, std::span(m32.data(), size_t(m32.size())), int(m32.shape(1)),
                                               int(m32.shape(0)), alpha));
  });
  m.def("class_colour", [](int c) { return cnn::class_colour(c); });
  m.def("ssd_postprocess",
        [](const py::object& boxes, const py::object& logits, const py::object& anchors, float score_thresh,
           float nms_thresh, int topk, int per_image, float width, float height) {
          auto b = float_array(boxes, "wgc.cnn.detect: box regressions");
          auto l = float_array(logits, "wgc.cnn.detect: class logits");
          auto a = float_array(anchors, "wgc.cnn.detect: anchors");
          if (l.ndim() < 1) throw py::value_error("wgc.cnn.detect: class logits must be [..., classes]");
          cnn::DetectionOptions o;
          o.score_thresh = score_thresh, o.nms_thresh = nms_thresh, o.topk_candidates = topk;
          o.detections_per_img = per_image, o.image_width = width, o.image_height = height;
          auto dets = cnn::ssd_postprocess(span_of(b), span_of(l), span_of(a), uint32_t(l.shape(l.ndim() - 1)), o);
          py::list r;
          for (const auto& d : dets)
            r.append(py::make_tuple(d.label, d.score, py::make_tuple(d.box.x1, d.box.y1, d.box.x2, d.box.y2)));
          return r;
        });
  m.def("draw_detections", [](const py::object& src, const py::sequence& dets) {
    Image img = image_from(src);
    std::vector<cnn::Detection> v;
    for (const auto& d : dets) {
      auto t = d.cast<py::tuple>();
      auto bx = t[2].cast<std::array<float, 4>>();
      v.push_back({{bx[0], bx[1], bx[2], bx[3]}, t[1].cast<float>(), t[0].cast<int>()});
    }
    return image_to_numpy(cnn::draw_detections(img, v));
  });
  m.def("top_k", [](const py::object& logits, int k) {
    auto row = float_array(logits, "wgc.cnn.top_k: logits");
    if (k < 1) throw py::value_error("wgc.cnn.top_k: k must be >= 1");
    py::list r;
    for (const auto& p : cnn::top_k(span_of(row), k)) r.append(py::make_tuple(p.index, p.score, p.label));
    return r;
  });
  py::class_<PyCnnModel, std::shared_ptr<PyCnnModel>>(m, "CnnModel")
      .def(py::init<ContextPtr, std::string, std::string>(), py::arg("ctx"), py::arg("path"), py::arg("device"))
      .def("run", &PyCnnModel::run, py::arg("inputs"))
      .def("on_gpu", &PyCnnModel::on_gpu, py::arg("inputs"))
      .def("upscale", [](PyCnnModel& self, const py::object& src) { return self.upscale(image_from(src)); })
      .def_property_readonly("inputs", [](const PyCnnModel& self) { return self.values(true); })
      .def_property_readonly("outputs", [](const PyCnnModel& self) { return self.values(false); });
}

}  // namespace wgc::python
