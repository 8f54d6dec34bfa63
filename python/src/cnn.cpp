// wgc.cnn.Model: an ONNX image model (src/cnn) run on NumPy arrays.
#include "common.h"

#include "cnn/imagenet.h"
#include "cnn/model.h"
#include "io/image.h"
#include "util/error.h"

#include <filesystem>

namespace wgc::python {
namespace {

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
    if (a.dtype().equal(py::dtype::of<int64_t>())) {
      auto c = py::array_t<int64_t, py::array::c_style>::ensure(a);
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

// An 8-bit image from a file (PNG, JPEG) or a uint8 array (height, width[, channels]).
Image image_from(const py::object& src) {
  if (py::isinstance<py::str>(src) || py::hasattr(src, "__fspath__")) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(src));
    py::gil_scoped_release nogil;
    return read_image(path);
  }
  if (!py::isinstance<py::array>(src))
    throw py::type_error("wgc.cnn.imagenet_input: give an image file or a uint8 array, got " +
                         py::str(py::type::of(src).attr("__name__")).cast<std::string>());
  auto a = py::reinterpret_borrow<py::array>(src);
  if (!a.dtype().equal(py::dtype::of<uint8_t>()))
    throw py::type_error("wgc.cnn.imagenet_input: the array must be uint8, got " +
                         py::str(static_cast<const py::object&>(a.dtype())).cast<std::string>());
  int64_t c = a.ndim() == 3 ? a.shape(2) : 1;
  if ((a.ndim() != 2 && a.ndim() != 3) || (c != 1 && c != 3 && c != 4) || a.size() == 0 ||
      a.shape(0) * a.shape(1) > kMaxImagePixels)
    throw py::value_error("wgc.cnn.imagenet_input: an image is (height, width) or (height, width, 1|3|4), not empty");
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
      .def_property_readonly("inputs", [](const PyCnnModel& self) { return self.values(true); })
      .def_property_readonly("outputs", [](const PyCnnModel& self) { return self.values(false); });
}

}  // namespace wgc::python
