// ParseDeviceFlag (commands.h): --device N|all of doctor and bench.
#include <exception>
#include <string>

#include "cli/commands.h"

namespace ortgpu::cli {

Expected<std::optional<int>> ParseDeviceFlag(const std::string& text) {
  if (text == "all") return std::optional<int>();
  size_t used = 0;
  int device = -1;
  try {
    device = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || device < 0) {
    return InvalidArgument("--device " + text + ": give a GPU (a CUDA ordinal: 0, 1, ...) or all");
  }
  return std::optional<int>(device);
}

Status CheckDeviceVisible(const std::string& text, int device, const serve::VisibleGpus& visible) {
  if (device >= 0 && device < visible.count()) return Status::Ok();
  std::string numbers = visible.count() == 0 ? "" : visible.count() == 1 ? ", numbered 0" : ", numbered 0.." + std::to_string(visible.count() - 1);
  return InvalidArgument("--device " + text + ": " + visible.DescribeCount() + numbers +
                         " (GPU numbers count after CUDA_VISIBLE_DEVICES); give one of those or all");
}

}  // namespace ortgpu::cli
