#include "tune/gpu_memory.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "gpu/gpu_info.h"
#include "ort/tensor.h"

namespace ortgpu::tune {
namespace {

constexpr const char* kForms = "bytes (8000000000), a size with a unit (64GiB, 80GB, 512MiB) or a percentage of the "
                               "GPU's memory (90%)";

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument(fmt::format("--max-gpu-memory {}: {}; give {}", text, why, kForms));
}

// Bytes per row of `t`: its element size times every dimension but the
// first (the batch); a variable one counts as 1. Strings count 0.
int64_t BytesPerRow(const TensorInfo& t) {
  if (!t.is_tensor) return 0;
  int64_t n = static_cast<int64_t>(ElementSize(t.dtype));
  for (size_t d = 1; d < t.shape.size(); ++d) n *= std::max<int64_t>(t.shape[d], 1);
  return n;
}

}  // namespace

Expected<GpuMemoryLimitSpec> ParseGpuMemoryLimit(std::string_view text) {
  GpuMemoryLimitSpec spec;
  spec.text = std::string(text);
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) return Bad(text, "no number");
  std::string unit(ptr, end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  if (!(value > 0) || !std::isfinite(value)) return Bad(text, "the limit must be above 0");
  if (unit == "%") {
    if (value > 100) return Bad(text, "a percentage is at most 100");
    spec.percent = value;
    return spec;
  }
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},       {"B", 1},       {"KiB", 1024.0},  {"MiB", 1024.0 * 1024},  {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = value * scale;
    if (bytes < 1 || bytes > 9e18) return Bad(text, "out of range");
    spec.bytes = static_cast<int64_t>(bytes);
    return spec;
  }
  return Bad(text, fmt::format("unknown unit '{}'", unit));
}

Expected<GpuMemoryLimit> ResolveGpuMemoryLimit(const std::optional<GpuMemoryLimitSpec>& spec, Provider provider,
                                               gpu::Nvml* nvml) {
  GpuMemoryLimit out;
  if (!spec) return out;
  if (provider == Provider::kCpu) {
    out.note = fmt::format("--max-gpu-memory {} does not apply to --provider cpu: the CPU provider uses no GPU "
                           "memory, so no candidate is left out for memory",
                           spec->text);
    return out;
  }
  if (spec->bytes) {
    out.bytes = *spec->bytes;
    out.source = fmt::format("--max-gpu-memory {}: {}", spec->text, gpu::FormatBytes(static_cast<uint64_t>(*spec->bytes)));
    return out;
  }
  std::unique_ptr<gpu::Nvml> owned;
  if (nvml == nullptr) {
    owned = gpu::NewNvml();
    nvml = owned.get();
  }
  const auto need_bytes = [&](const std::string& why) {
    return InvalidArgument(fmt::format("--max-gpu-memory {} needs the GPU's total memory, and {}; give a size instead "
                                       "(e.g. --max-gpu-memory 64GiB), or run `ortgpu doctor`",
                                       spec->text, why));
  };
  if (Status s = nvml->Load(); !s.ok()) return need_bytes("NVML cannot be loaded: " + s.message());
  auto count = nvml->DeviceCount();
  if (!count.ok() || *count == 0) return need_bytes("NVML lists no GPU");
  auto device = nvml->Device(0);
  if (!device.ok()) return need_bytes("NVML cannot read GPU 0: " + device.status().message());
  const uint64_t total = device->memory.total;
  out.bytes = static_cast<int64_t>(static_cast<double>(total) * *spec->percent / 100.0);
  out.source = fmt::format("--max-gpu-memory {} of GPU 0 ({}, {}): {}", spec->text, device->name,
                           gpu::FormatBytes(total), gpu::FormatBytes(static_cast<uint64_t>(*out.bytes)));
  return out;
}

Expected<GpuMemoryLimit> GpuMemoryLimitFromFlag(const std::string& flag, Provider provider, gpu::Nvml* nvml) {
  if (flag.empty()) return GpuMemoryLimit{};
  ORTGPU_ASSIGN_OR_RETURN(GpuMemoryLimitSpec spec, ParseGpuMemoryLimit(flag));
  return ResolveGpuMemoryLimit(spec, provider, nvml);
}

void EstimateModelMemory(const std::string& model_file, const std::vector<TensorInfo>& inputs,
                         const std::vector<TensorInfo>& outputs, ModelTraits& traits) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(model_file, ec);
  traits.weight_bytes = ec ? 0 : static_cast<int64_t>(size);
  int64_t per_row = 0;
  for (const TensorInfo& t : inputs) per_row += BytesPerRow(t);
  for (const TensorInfo& t : outputs) per_row += BytesPerRow(t);
  traits.activation_bytes_per_row = per_row;
}

}  // namespace ortgpu::tune
