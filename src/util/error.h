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

}  // namespace wgc
