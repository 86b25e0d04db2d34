#include "cli/cuda_setup.h"

#include <fmt/format.h>

#include "gpu/cuda_driver.h"
#include "gpu/dynamic_loader.h"
#include "gpu/library_probe.h"
#include "gpu/library_search.h"
#include "gpu/nvml.h"
#include "ort/runtime.h"
#include "sys/environment.h"
#include "sys/file_system.h"

namespace ortgpu::cli {

const std::vector<gpu::PreloadResult>& PreloadCudaLibrariesOnce() {
  static const std::vector<gpu::PreloadResult> results = [] {
    gpu::LibrarySearch search(RealFileSystem(), RealEnvironment());
    return gpu::PreloadCudaLibraries(search, gpu::RealDynamicLoader());
  }();
  return results;
}

GpuProbe ProbeGpus() {
  GpuProbe probe;
  auto driver = gpu::NewCudaDriver();
  if (Status st = driver->Load(); !st.ok()) {
    probe.why_none = st.message();  // names libcuda.so.1 and dlerror's reason
    return probe;
  }
  if (Status st = driver->Init(); !st.ok()) {
    probe.why_none = st.message();
    return probe;
  }
  auto count = driver->DeviceCount();
  if (!count.ok() || *count <= 0) {
    probe.why_none = count.ok() ? "the CUDA driver reports no device" : count.status().message();
    return probe;
  }
  for (int i = 0; i < *count; ++i) {
    auto props = driver->Device(i);
    probe.names.push_back(props.ok() ? props->name : "unknown GPU");
  }
  return probe;
}

std::string VersionText() {
  std::string out = fmt::format("ortgpu {}\n", ORTGPU_VERSION);
  Runtime& rt = Runtime::Get();
  out += fmt::format("ONNX Runtime {} ({})\n", rt.Version(), rt.LibraryPath());

  auto nvml = gpu::NewNvml();
  auto driver = gpu::NewCudaDriver();
  std::string driver_line = "NVIDIA driver: not found (no libcuda.so.1 / libnvidia-ml.so.1)";
  if (nvml->Load().ok()) {
    if (auto v = nvml->DriverVersion(); v.ok()) {
      driver_line = fmt::format("NVIDIA driver {}", *v);
      if (auto c = nvml->CudaDriverVersion(); c.ok()) {
        driver_line += fmt::format(" (supports CUDA {}.{})", *c / 1000, (*c % 1000) / 10);
      }
    }
  } else if (driver->Load().ok()) {
    if (auto v = driver->DriverVersion(); v.ok()) {
      driver_line = fmt::format("NVIDIA driver supporting CUDA {}.{} ({})", *v / 1000, (*v % 1000) / 10,
                                driver->LibraryPath());
    }
  }
  out += driver_line + "\n";

  gpu::LibrarySearch search(RealFileSystem(), RealEnvironment());
  gpu::LibraryProbeOptions probe;
  probe.load_libraries = true;
  for (const auto& lib : gpu::ProbeCudaLibraries(RealFileSystem(), search, &gpu::RealDynamicLoader(), probe)) {
    if (lib.component != "cudart" && lib.component != "cudnn") continue;
    if (lib.loaded) {
      out += fmt::format("{} {} ({})\n", lib.display, lib.loaded_version.empty() ? "version unknown" : lib.loaded_version,
                         lib.loaded_path);
    } else {
      out += fmt::format("{}: not found ({})\n", lib.display,
                         lib.load_error.empty() ? lib.soname + " not on the loader's path" : lib.load_error);
    }
  }
  return out;
}

}  // namespace ortgpu::cli
