// Shared by the binding's files: the context the Python objects share, the lock that serializes
// device work, tensors, and NumPy conversions.
//
// Threads: every call that touches the device releases the GIL first and then takes its context's
// lock (DeviceLock), so a thread waiting for the lock never holds the GIL and a thread holding the
// lock never waits for the GIL. GPU objects whose Python owner dies while another thread holds the
// lock are destroyed by that thread when it lets go (PyContext::dispose).
#pragma once

#include "gpu/context.h"
#include "gpu/tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::python {

namespace py = pybind11;

class PyContext {
 public:
  explicit PyContext(ContextOptions options) : ctx_(options) {}
  ~PyContext();

  const Context& ctx() const { return ctx_; }

  // Destroys `garbage` now if the device is free, else when the thread using it lets go.
  void dispose(std::shared_ptr<void> garbage);

  // Holds the device (without touching the GIL: for worker threads).
  class Busy {
   public:
    explicit Busy(PyContext& c);
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PyContext& c_;
    std::unique_lock<std::mutex> lock_;
  };

 private:
  void bury_all();  // caller holds device_

  Context ctx_;
  std::mutex device_;
  std::mutex grave_mu_;
  std::vector<std::shared_ptr<void>> graveyard_;
};

// Releases the GIL, then holds the device; the reverse on destruction.
class DeviceLock {
 public:
  explicit DeviceLock(PyContext& c) : busy_(c) {}

 private:
  py::gil_scoped_release nogil_;  // first released, last reacquired
  PyContext::Busy busy_;
};

using ContextPtr = std::shared_ptr<PyContext>;

// A device tensor owned by Python.
struct PyTensor {
  PyTensor(ContextPtr c, Tensor t) : ctx(std::move(c)), tensor(std::move(t)) {}
  ~PyTensor();
  PyTensor(const PyTensor&) = delete;
  PyTensor& operator=(const PyTensor&) = delete;

  ContextPtr ctx;
  Tensor tensor;
};
using TensorPtr = std::shared_ptr<PyTensor>;

// The context of wgc calls given none: made on first use (WGC_BACKEND chooses its backend).
ContextPtr default_context();
ContextPtr context_or_default(const std::optional<ContextPtr>& c);

// A shape from an int or a sequence of ints >= 0 (TypeError / ValueError naming `what`).
Shape shape_from(const py::handle& obj, std::string_view what);
py::tuple shape_tuple(const Shape& s);

// NumPy dtypes the tensors hold: float32, int32, uint32 (TypeError naming `what` for others).
DType dtype_from_numpy(const py::dtype& d, std::string_view what);
py::dtype numpy_dtype(DType t);
std::string dtype_name(DType t);  // "float32", "int32", "uint32"

// A C-contiguous float32 array (TypeError naming `what` when the dtype is another).
py::array_t<float> float_array(const py::handle& obj, std::string_view what);
std::span<const float> span_of(const py::array_t<float>& a);
// A new float32 array of `shape` that owns `data` (no copy).
py::array_t<float> to_numpy(std::vector<float>&& data, const std::vector<py::ssize_t>& shape);

// Uploads a C-contiguous array of a supported dtype (GIL released while copying to the device).
TensorPtr upload(const ContextPtr& ctx, const py::array& a, std::string_view what);
py::array download(const PyTensor& t);

void bind_context(py::module_& m);
void bind_ops(py::module_& m);
void bind_run(py::module_& m);
void bind_llm(py::module_& m);
void bind_cnn(py::module_& m);
void bind_bench(py::module_& m);

}  // namespace wgc::python
