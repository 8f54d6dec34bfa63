// wgc.Context, wgc.Tensor, the default context and the NumPy conversions.
#include "common.h"

#include "cpu/llm/cpu_features.h"
#include "util/error.h"
#include "util/json.h"

#include <cstring>

namespace wgc::python {

// ---- PyContext -------------------------------------------------------------------------------

PyContext::~PyContext() {
  std::lock_guard lock(grave_mu_);
  graveyard_.clear();
}

void PyContext::dispose(std::shared_ptr<void> garbage) {
  std::unique_lock lock(device_, std::try_to_lock);
  if (lock.owns_lock()) {
    garbage.reset();
    return;
  }
  std::lock_guard g(grave_mu_);
  graveyard_.push_back(std::move(garbage));
}

void PyContext::bury_all() {
  std::vector<std::shared_ptr<void>> dead;
  {
    std::lock_guard g(grave_mu_);
    dead.swap(graveyard_);
  }
}

PyContext::Busy::Busy(PyContext& c) : c_(c), lock_(c.device_) {}

PyContext::Busy::~Busy() { c_.bury_all(); }

PyTensor::~PyTensor() {
  if (ctx && tensor) ctx->dispose(std::make_shared<Tensor>(std::move(tensor)));
}

// ---- NumPy -----------------------------------------------------------------------------------

DType dtype_from_numpy(const py::dtype& d, std::string_view what) {
  if (d.is(py::dtype::of<float>())) return DType::F32;
  if (d.is(py::dtype::of<int32_t>())) return DType::I32;
  if (d.is(py::dtype::of<uint32_t>())) return DType::U32;
  // dtype.is compares identity; equal dtypes made elsewhere (e.g. '<f4') compare by value here.
  if (d.equal(py::dtype::of<float>())) return DType::F32;
  if (d.equal(py::dtype::of<int32_t>())) return DType::I32;
  if (d.equal(py::dtype::of<uint32_t>())) return DType::U32;
  throw py::type_error(std::string(what) + " must be float32, int32 or uint32, got " +
                       py::str(static_cast<const py::object&>(d)).cast<std::string>());
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::F32: return py::dtype::of<float>();
    case DType::I32: return py::dtype::of<int32_t>();
    case DType::U32: return py::dtype::of<uint32_t>();
    default: throw py::type_error("wgc: a tensor of type " + std::string(to_string(t)) + " has no NumPy form here");
  }
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::I32: return "int32";
    case DType::U32: return "uint32";
    default: return std::string(to_string(t));
  }
}

py::array_t<float> float_array(const py::handle& obj, std::string_view what) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string(what) + " must be a NumPy array of float32, got " +
                         py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().equal(py::dtype::of<float>()))
    throw py::type_error(std::string(what) + " must be float32, got " +
                         py::str(static_cast<const py::object&>(a.dtype())).cast<std::string>());
  return py::array_t<float, py::array::c_style>::ensure(a);
}

std::span<const float> span_of(const py::array_t<float>& a) { return {a.data(), size_t(a.size())}; }

py::array_t<float> to_numpy(std::vector<float>&& data, const std::vector<py::ssize_t>& shape) {
  auto* owned = new std::vector<float>(std::move(data));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>(shape, owned->data(), free_when_done);
}

TensorPtr upload(const ContextPtr& ctx, const py::array& arr, std::string_view what) {
  DType t = dtype_from_numpy(arr.dtype(), what);
  if (arr.size() == 0)
    throw py::value_error(std::string(what) + " is empty (a device tensor needs at least 1 element)");
  py::array a = py::array::ensure(arr, py::array::c_style);
  Shape shape(a.shape(), a.shape() + a.ndim());
  auto bytes = std::span(static_cast<const std::byte*>(a.data()), size_t(a.nbytes()));
  Tensor tensor;
  {
    DeviceLock lock(*ctx);
    tensor = make_tensor(ctx->ctx(), shape, t, bytes);
  }
  return std::make_shared<PyTensor>(ctx, std::move(tensor));
}

py::array download(const PyTensor& t) {
  std::vector<py::ssize_t> shape(t.tensor.shape().begin(), t.tensor.shape().end());
  py::array out(numpy_dtype(t.tensor.dtype()), shape);
  auto bytes = std::span(static_cast<std::byte*>(out.mutable_data()), size_t(out.nbytes()));
  DeviceLock lock(*t.ctx);
  wgc::download(t.ctx->ctx(), t.tensor, bytes);
  return out;
}

// ---- bindings ----------------------------------------------------------------------------------

// Kept for the life of the process (never destroyed: Dawn is not torn down during interpreter exit).
ContextPtr default_context() {
  static auto* ctx = [] {
    py::gil_scoped_release nogil;
    return new ContextPtr(std::make_shared<PyContext>(ContextOptions{}));
  }();
  return *ctx;
}

ContextPtr context_or_default(const std::optional<ContextPtr>& c) { return c && *c ? *c : default_context(); }

Shape shape_from(const py::handle& obj, std::string_view what) {
  Shape s;
  if (py::isinstance<py::int_>(obj)) {
    s.push_back(obj.cast<int64_t>());
  } else {
    for (auto d : py::iter(obj)) {
      if (!py::isinstance<py::int_>(d))
        throw py::type_error(std::string(what) + ": a shape holds ints, got " +
                             py::str(py::type::of(d).attr("__name__")).cast<std::string>());
      s.push_back(d.cast<int64_t>());
    }
  }
  for (int64_t d : s)
    if (d < 0) throw py::value_error(std::string(what) + ": a negative dimension in the shape " + to_string(s));
  return s;
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

namespace {

TensorPtr empty_tensor(const ContextPtr& ctx, const Shape& shape, DType t, std::optional<uint32_t> fill) {
  if (numel(shape) == 0)
    throw py::value_error("wgc.Tensor: the shape " + to_string(shape) + " has no elements (at least 1 is needed)");
  Tensor tensor;
  {
    DeviceLock lock(*ctx);
    tensor = make_tensor(ctx->ctx(), shape, t);
    if (fill) fill_u32(ctx->ctx(), tensor, *fill);
  }
  return std::make_shared<PyTensor>(ctx, std::move(tensor));
}

}  // namespace

void bind_context(py::module_& m) {
  py::class_<PyContext, ContextPtr>(m, "Context", R"doc(
A WebGPU device: one adapter, its queue, and the caches and buffer pool that hang off it.

Context(backend="auto", debug=False, robust=False, adapter=-1)

backend: "auto" (a GPU if Vulkan offers one, else SwiftShader on the CPU), "gpu" or
"cpu-vulkan". debug: Dawn's validation on. robust: keep Dawn's bounds checks of buffer accesses
(for untrusted WGSL given to wgc.run). adapter: an index among the backend's adapters (-1: Dawn's
pick). Every wgc function takes ctx=...; without it they share one default context (WGC_BACKEND
sets its backend).)doc")
      .def(py::init([](const std::string& backend, bool debug, bool robust, int adapter) {
             ContextOptions o;
             try {
               o.backend = parse_backend(backend);
             } catch (const Error& e) {
               throw py::value_error(std::string("wgc.Context: backend: ") + e.what());
             }
             o.debug = debug;
             o.robust = robust;
             o.adapter_index = adapter;
             py::gil_scoped_release nogil;
             return std::make_shared<PyContext>(o);
           }),
           py::arg("backend") = "auto", py::arg("debug") = false, py::arg("robust") = false, py::arg("adapter") = -1)
      .def(
          "info",
          [](PyContext& c) {
            json::Value o = json::parse(describe(c.ctx(), /*json=*/true), "wgc.info");
            o.set("cpu_engine", llm::cpu::describe_cpu_json());  // as `wgc info --json`
            return py::module_::import("json").attr("loads")(o.dump());
          },
          "The adapter, backend, features and limits: what `wgc info --json` prints, as a dict.")
      .def_property_readonly(
          "device", [](const PyContext& c) { return c.ctx().adapter().device; },
          "The adapter's name, e.g. 'NVIDIA H200' or 'SwiftShader Device (Subzero)'.")
      .def_property_readonly(
          "is_cpu", [](const PyContext& c) { return c.ctx().adapter().is_cpu(); },
          "True on a CPU adapter (SwiftShader).")
      .def_property_readonly(
          "allocated_buffers", [](const PyContext& c) { return allocated_buffers(c.ctx()); },
          "GPU buffers that exist now (in use or pooled): flat across repeated work means no leak.")
      .def_property_readonly("allocated_bytes", [](const PyContext& c) { return allocated_buffer_bytes(c.ctx()); })
      .def("__repr__", [](const PyContext& c) {
        const auto& a = c.ctx().adapter();
        return "wgc.Context('" + a.device + "', " + a.backend + ", " + a.adapter_type + ")";
      });

  m.def("default_context", &default_context,
        "The context wgc calls use when given none (made on first use; WGC_BACKEND chooses its backend).");

  py::class_<PyTensor, TensorPtr>(m, "Tensor", R"doc(
An array in GPU memory (float32, int32 or uint32). Ops given Tensors return Tensors without
copying through the host, so a chain of ops stays on the device; .numpy() reads one back.

Tensor(array, ctx=None) uploads a NumPy array; Tensor.empty / Tensor.zeros make one.)doc")
      .def(py::init([](const py::array& a, std::optional<ContextPtr> ctx) {
             return upload(context_or_default(ctx), a, "wgc.Tensor: the array");
           }),
           py::arg("array"), py::arg("ctx") = py::none())
      .def_static(
          "empty",
          [](const py::object& shape, const py::object& dtype, std::optional<ContextPtr> ctx) {
            DType t = dtype_from_numpy(py::dtype::from_args(dtype), "wgc.Tensor.empty: dtype");
            return empty_tensor(context_or_default(ctx), shape_from(shape, "wgc.Tensor.empty"), t, std::nullopt);
          },
          py::arg("shape"), py::arg("dtype") = "float32", py::arg("ctx") = py::none(),
          "A tensor of this shape whose contents are undefined (a reused buffer).")
      .def_static(
          "zeros",
          [](const py::object& shape, const py::object& dtype, std::optional<ContextPtr> ctx) {
            DType t = dtype_from_numpy(py::dtype::from_args(dtype), "wgc.Tensor.zeros: dtype");
            return empty_tensor(context_or_default(ctx), shape_from(shape, "wgc.Tensor.zeros"), t, 0u);
          },
          py::arg("shape"), py::arg("dtype") = "float32", py::arg("ctx") = py::none(), "A tensor of zeros.")
      .def("numpy", &download, "Reads the tensor back into a new NumPy array (waits for the work before it).")
      .def(
          "__array__",
          [](const PyTensor& t, const py::object& dtype) {
            py::array a = download(t);
            return dtype.is_none() ? a : a.attr("astype")(dtype).cast<py::array>();
          },
          py::arg("dtype") = py::none())
      .def_property_readonly("shape", [](const PyTensor& t) { return shape_tuple(t.tensor.shape()); })
      .def_property_readonly("dtype", [](const PyTensor& t) { return numpy_dtype(t.tensor.dtype()); })
      .def_property_readonly("ndim", [](const PyTensor& t) { return t.tensor.shape().size(); })
      .def_property_readonly("size", [](const PyTensor& t) { return t.tensor.numel(); })
      .def_property_readonly("nbytes", [](const PyTensor& t) { return t.tensor.bytes(); })
      .def_property_readonly("context", [](const PyTensor& t) { return t.ctx; })
      .def(
          "reshape",
          [](const PyTensor& t, const py::args& args) {
            py::object spec = args.size() == 1 ? py::object(args[0]) : py::object(args);
            Shape s = shape_from(spec, "wgc.Tensor.reshape");
            if (numel(s) != t.tensor.numel())
              throw py::value_error("wgc.Tensor.reshape: cannot view " + to_string(t.tensor.shape()) + " as " +
                                    to_string(s) + " (element counts differ)");
            return std::make_shared<PyTensor>(t.ctx, t.tensor.view(s));
          },
          "The same buffer seen with another shape of as many elements (no copy).")
      .def("__len__", [](const PyTensor& t) { return t.tensor.shape().empty() ? 1 : t.tensor.shape()[0]; })
      .def("__repr__", [](const PyTensor& t) {
        return "wgc.Tensor(shape=" + py::repr(shape_tuple(t.tensor.shape())).cast<std::string>() +
               ", dtype=" + dtype_name(t.tensor.dtype()) + ")";
      });
}

}  // namespace wgc::python
