#include "serve/scheduler/gpu_failure.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace ortgpu::serve {

bool IsStickyGpuError(std::string_view message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // cudaError_t names, CUresult names, and cudaGetErrorString's texts (CUDA
  // 12/13) of the errors the CUDA documentation calls sticky.
  static constexpr std::array<std::string_view, 24> kSticky = {
      "cudaerrorillegaladdress",        "cuda_error_illegal_address",     "illegal memory access",
      "cudaerrorlaunchfailure",         "cuda_error_launch_failed",       "unspecified launch failure",
      "cudaerrorlaunchtimeout",         "cuda_error_launch_timeout",      "the launch timed out",
      "cudaerrorassert",                "device-side assert",             "cudaerrorhardwarestackerror",
      "hardware stack error",           "cudaerrorillegalinstruction",    "illegal instruction",
      "cudaerrormisalignedaddress",     "misaligned address",             "cudaerrorinvalidpc",
      "cudaerroreccuncorrectable",      "uncorrectable ecc error",        "fallen off the bus",
      "cuda_error_ecc_uncorrectable",   "cuda failure 999",               "cudaerrorunknown"};
  for (std::string_view s : kSticky) {
    if (lower.find(s) != std::string::npos) return true;
  }
  return false;
}

}  // namespace ortgpu::serve
