// The exceptions wgc throws. Every message names what failed (op, file, tensor, limit).
#pragma once

#include <stdexcept>
#include <string>

namespace wgc {

// Base of every wgc error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// No usable adapter, the Null backend, a lost device, a failed request.
struct DeviceError : Error {
  using Error::Error;
};

// The GPU device was lost (a driver reset, the GPU reclaimed, an internal error that left it
// unusable): every object made on its Context is gone, and every later call on them throws this.
// Retryable: the same work succeeds on a new Context (wgc serve rebuilds one itself).
struct DeviceLost : DeviceError {
  using DeviceError::DeviceError;
};

// WGSL that does not compile; the message carries "label:line:col: text" for each error.
struct ShaderError : Error {
  using Error::Error;
};

// Dawn reported a validation or out-of-memory error for an operation.
struct GpuError : Error {
  using Error::Error;
};

// A request past a device limit (buffer size, workgroups, bindings).
struct LimitError : Error {
  using Error::Error;
};

// A parameter of a library call out of range. `option` is its name in the library (a field such as
// "top_p"), so a front end can say it in its own words (the CLI's --top-p, a request's field);
// `problem` is the rest of the message ("must be in (0, 1], got 1.5").
struct OptionError : Error {
  OptionError(std::string option_name, std::string what_is_wrong)
      : Error(option_name + " " + what_is_wrong), option(std::move(option_name)), problem(std::move(what_is_wrong)) {}
  std::string option, problem;
};

}  // namespace wgc
