// The extension module wgc._wgc: wgc's C++ API for the Python package (python/wgc wraps it).
#include "common.h"

#include "util/error.h"

#include <regex>

namespace wgc::python {
namespace {

// "label:line:col: message" lines of a ShaderError, as (line, column, message) tuples.
py::list shader_messages(const std::string& what) {
  static const std::regex line_re(R"(^(.*):(\d+):(\d+): (.*)$)");
  py::list out;
  size_t pos = 0;
  while (pos <= what.size()) {
    size_t eol = what.find('\n', pos);
    if (eol == std::string::npos) eol = what.size();
    std::string line = what.substr(pos, eol - pos);
    std::smatch mt;
    if (std::regex_match(line, mt, line_re))
      out.append(py::make_tuple(std::stoi(mt[2].str()), std::stoi(mt[3].str()), mt[4].str()));
    pos = eol + 1;
  }
  return out;
}

}  // namespace
}  // namespace wgc::python

PYBIND11_MODULE(_wgc, m) {
  using namespace wgc::python;
  m.doc() = "wgc's C++ API (WebGPU compute on Dawn); use it through the wgc package.";

  static py::exception<wgc::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<wgc::DeviceError> device_error(m, "DeviceError", error.ptr());
  static py::exception<wgc::DeviceLost> device_lost(m, "DeviceLost", device_error.ptr());
  static py::exception<wgc::GpuError> gpu_error(m, "GpuError", error.ptr());
  static py::exception<wgc::LimitError> limit_error(m, "LimitError", error.ptr());
  static py::exception<wgc::ShaderError> shader_error(m, "ShaderError", error.ptr());
  error.doc() = "An error from wgc's library (its message names what failed).";
  device_error.doc() = "No usable adapter, a lost device, or a failed device request.";
  device_lost.doc() =
      "The GPU device was lost (driver reset, GPU reclaimed): every object made on its Context is gone. "
      "Retryable: make a new Context (and model) and run the work again.";
  gpu_error.doc() = "Dawn reported a validation or out-of-memory error for an operation.";
  limit_error.doc() = "A request past a device limit (buffer size, workgroups, bindings).";
  shader_error.doc() =
      "WGSL that does not compile. .errors lists (line, column, message) for each error; .line and .column are "
      "the first one's.";
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](const py::object& type, const char* what) { PyErr_SetString(type.ptr(), what); };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const wgc::ShaderError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(shader_error.ptr())(e.what());
      py::list msgs = shader_messages(e.what());
      exc.attr("errors") = msgs;
      exc.attr("line") = msgs.empty() ? py::object(py::none()) : msgs[0].cast<py::tuple>()[0];
      exc.attr("column") = msgs.empty() ? py::object(py::none()) : msgs[0].cast<py::tuple>()[1];
      PyErr_SetObject(shader_error.ptr(), exc.ptr());
    } catch (const wgc::DeviceLost& e) {
      raise(device_lost, e.what());
    } catch (const wgc::DeviceError& e) {
      raise(device_error, e.what());
    } catch (const wgc::GpuError& e) {
      raise(gpu_error, e.what());
    } catch (const wgc::LimitError& e) {
      raise(limit_error, e.what());
    } catch (const wgc::Error& e) {
      raise(error, e.what());
    }
  });

  bind_context(m);
  bind_ops(m);
  bind_run(m);
  bind_llm(m);
  bind_cnn(m);
  bind_bench(m);
}
