// Nvml: the NVIDIA Management Library (libnvidia-ml.so.1) behind an
// interface, for what the CUDA driver API cannot say without a context: the
// driver's own version string, used memory, utilisation, MIG mode and the
// memory a given process holds. FakeNvml (tests/fakes/fake_nvml.h) stands in
// for it in tests.
//
// The real implementation (NewNvml) opens the library with dlopen and
// declares its entry points by hand. Devices are addressed by NVML index
// (PCI bus order, not affected by CUDA_VISIBLE_DEVICES; match them to CUDA
// devices by UUID). Not thread-safe: callers serialise (bench samples memory
// from one thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gpu/dynamic_loader.h"
#include "status/expected.h"
#include "status/status.h"

namespace ortgpu::gpu {

struct NvmlMemory {
  uint64_t total = 0;  // bytes
  uint64_t used = 0;
  uint64_t free = 0;
};

// A snapshot of one device. Optional fields are those NVML may refuse for a
// given board (NOT_SUPPORTED: MIG mode on GPUs without MIG, utilisation
// inside some MIG/vGPU setups).
struct NvmlDevice {
  unsigned index = 0;
  std::string name;        // "NVIDIA H200"
  std::string uuid;        // "GPU-..." as nvidia-smi prints it
  std::string pci_bus_id;  // "00000000:18:00.0" (nvmlPciInfo_t.busId)
  int cc_major = 0;
  int cc_minor = 0;
  NvmlMemory memory;
  std::optional<unsigned> utilization_gpu;     // percent over the last sample period
  std::optional<unsigned> utilization_memory;  // percent of time memory was read/written
  std::optional<bool> mig_current;             // MIG mode now
  std::optional<bool> mig_pending;             // MIG mode after the next GPU reset
};

class Nvml {
 public:
  virtual ~Nvml() = default;

  // dlopen + nvmlInit_v2. Idempotent. The message carries dlerror's text or
  // the NVML error (e.g. NVML_ERROR_DRIVER_NOT_LOADED).
  [[nodiscard]] virtual Status Load() = 0;
  // The absolute path of the loaded library; empty before Load().
  virtual std::string LibraryPath() const = 0;
  // nvmlSystemGetDriverVersion: "580.159.03". REQUIRES: Load() succeeded.
  virtual Expected<std::string> DriverVersion() = 0;
  // nvmlSystemGetCudaDriverVersion_v2: 13000 for CUDA 13.0.
  virtual Expected<int> CudaDriverVersion() = 0;
  virtual Expected<unsigned> DeviceCount() = 0;
  // REQUIRES: index < DeviceCount().
  virtual Expected<NvmlDevice> Device(unsigned index) = 0;
  // Memory alone, for sampling during a benchmark: nvmlDeviceGetMemoryInfo_v2
  // ("used" as nvidia-smi shows it, reserved memory excluded), v1 as fallback.
  virtual Expected<NvmlMemory> Memory(unsigned index) = 0;
  // GPU memory in bytes used by process `pid` on device `index`
  // (nvmlDeviceGetComputeRunningProcesses_v3). NotFound when the process
  // holds no context there (inside a container NVML reports host pids, so
  // the container's own pid is not found); Unavailable when NVML cannot
  // attribute memory to processes (NVML_VALUE_NOT_AVAILABLE).
  virtual Expected<uint64_t> ProcessMemoryUsed(unsigned index, uint32_t pid) = 0;
};

struct NvmlOptions {
  std::string library = "libnvidia-ml.so.1";  // the soname passed to dlopen
  // Opens `library` and resolves its entry points; tests pass a
  // FakeDynamicLoader. Not owned: must outlive the Nvml. REQUIRES: not null.
  DynamicLoader* loader = &RealDynamicLoader();
};

// The real NVML over options.loader->Open(options.library); nvmlShutdown on
// destruction when nvmlInit succeeded. Never null.
std::unique_ptr<Nvml> NewNvml(const NvmlOptions& options = {});

// NVML_ERROR_* names and nvmlErrorString-like text for an nvmlReturn_t:
// NvmlErrorText(9) == "NVML_ERROR_DRIVER_NOT_LOADED (NVIDIA driver is not loaded)".
std::string NvmlErrorText(int code);

inline constexpr int kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlErrorInsufficientSize = 7;
inline constexpr int kNvmlErrorDriverNotLoaded = 9;
inline constexpr int kNvmlErrorLibRmVersionMismatch = 18;

}  // namespace ortgpu::gpu
