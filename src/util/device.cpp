#include "util/device.h"

#include "util/error.h"

#include <string>

namespace wgc {

std::string_view to_string(Device d) {
  switch (d) {
    case Device::Auto: return "auto";
    case Device::Gpu: return "gpu";
    case Device::Cpu: return "cpu";
  }
  return "?";
}

Device parse_device(std::string_view name) {
  for (Device d : {Device::Auto, Device::Gpu, Device::Cpu})
    if (to_string(d) == name) return d;
  throw Error("wgc: unknown device '" + std::string(name) + "' (auto, gpu, cpu)");
}

}  // namespace wgc
