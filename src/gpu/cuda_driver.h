// GpuDriver: the CUDA driver API (libcuda.so.1) as ortgpu sees it, behind an
// interface so doctor and bench can be tested with FakeGpuDriver
// (tests/fakes/fake_gpu_driver.h) on machines without a GPU.
//
// The real implementation (NewCudaDriver) opens libcuda with dlopen at run
// time and declares the few entry points it needs by hand: no CUDA headers or
// link-time dependency, so ortgpu starts on CPU-only machines and can say why
// the driver is missing instead of failing to start.
//
// Usage: Load(), then DriverVersion() (works without cuInit), then Init(),
// then DeviceCount() and Device(i). Not thread-safe: one thread probes.
// cuMemGetInfo is deliberately absent: it needs a CUDA context (hundreds of MB
// of GPU memory and ~100 ms); NVML reports used memory without one. The one
// call that does make a context is MeasureCopyBandwidth, doctor's short copy
// test, run only when ORT is about to make the same context anyway.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpu/dynamic_loader.h"
#include "status/expected.h"
#include "status/status.h"

namespace ortgpu::gpu {

// What the CUDA driver reports about one device (cuDeviceGet* calls).
struct CudaDeviceProps {
  int ordinal = 0;             // CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;            // "NVIDIA H200"
  std::string uuid;            // "GPU-5f1c2d3e-...", formatted like nvidia-smi
  std::string pci_bus_id;      // "0000:18:00.0" (cuDeviceGetPCIBusId)
  int cc_major = 0;            // compute capability, e.g. 9 and 0 for sm_90
  int cc_minor = 0;
  uint64_t total_memory = 0;   // bytes (cuDeviceTotalMem_v2)
};

// doctor's host-device copy test (MeasureCopyBandwidth).
struct CopyTestOptions {
  uint64_t bytes = 64ull << 20;  // per copy: 64 MiB, ~1-6 ms on PCIe 4/5
  int repetitions = 3;           // timed copies per direction and host memory kind
};

// Host-device bandwidth in GB/s (1e9 bytes per second), the best of the
// timed repetitions (one untimed copy of each kind first), as CUDA's
// bandwidthTest reports it.
struct CopyBandwidth {
  uint64_t bytes = 0;
  int repetitions = 0;
  double pinned_h2d = 0;    // page-locked host memory (cuMemAllocHost) to device
  double pinned_d2h = 0;
  double pageable_h2d = 0;  // ordinary (malloc'ed) host memory to device
  double pageable_d2h = 0;
  double total_ms = 0;      // the whole test, allocations included
};

class GpuDriver {
 public:
  virtual ~GpuDriver() = default;

  // Opens libcuda and resolves its entry points. Idempotent. On failure the
  // message carries the dynamic loader's own text (dlerror).
  [[nodiscard]] virtual Status Load() = 0;
  // The absolute path of the libcuda that was loaded; empty before Load().
  virtual std::string LibraryPath() const = 0;
  // cuDriverGetVersion: the highest CUDA version the driver supports, as
  // 1000*major + 10*minor (13000 = CUDA 13.0). REQUIRES: Load() succeeded.
  virtual Expected<int> DriverVersion() = 0;
  // cuInit(0). Fails e.g. with CUDA_ERROR_NO_DEVICE when CUDA_VISIBLE_DEVICES
  // hides every GPU. REQUIRES: Load() succeeded.
  [[nodiscard]] virtual Status Init() = 0;
  // REQUIRES: Init() succeeded.
  virtual Expected<int> DeviceCount() = 0;
  // REQUIRES: Init() succeeded and 0 <= ordinal < DeviceCount().
  virtual Expected<CudaDeviceProps> Device(int ordinal) = 0;
  // Copies options.bytes between host and device `ordinal` in both
  // directions, from page-locked and from pageable host memory, and times
  // each copy (synchronous cuMemcpyHtoD/DtoH). Retains the device's primary
  // context, the one ORT's CUDA EP uses, and keeps it for the process's life
  // so ORT does not create it a second time; frees every buffer. Unimplemented
  // when libcuda lacks an entry point; the CUresult's error otherwise.
  // REQUIRES: Init() succeeded and 0 <= ordinal < DeviceCount().
  virtual Expected<CopyBandwidth> MeasureCopyBandwidth(int ordinal, const CopyTestOptions& options) = 0;
};

struct CudaDriverOptions {
  // The soname passed to dlopen; the default finds the driver's libcuda the
  // way the CUDA runtime does. Tests point it at a file that does not exist.
  std::string library = "libcuda.so.1";
  // Opens `library` and resolves its entry points; tests pass a
  // FakeDynamicLoader. Not owned: must outlive the driver. REQUIRES: not null.
  DynamicLoader* loader = &RealDynamicLoader();
};

// The real driver over options.loader->Open(options.library). Never null;
// nothing is opened until Load().
std::unique_ptr<GpuDriver> NewCudaDriver(const CudaDriverOptions& options = {});

// 13000 -> "13.0", 12080 -> "12.8"; "unknown" for values <= 0.
std::string FormatCudaVersion(int version);

// The CUresult's enum name ("CUDA_ERROR_NO_DEVICE") for the codes doctor
// explains; "CUDA error <n>" otherwise. Used when libcuda's own
// cuGetErrorName is not available (and by fakes).
std::string CudaErrorName(int code);

// CUresult codes that doctor gives their own advice for.
inline constexpr int kCudaErrorStubLibrary = 34;
inline constexpr int kCudaErrorNoDevice = 100;
inline constexpr int kCudaErrorSystemDriverMismatch = 803;
inline constexpr int kCudaErrorCompatNotSupportedOnDevice = 804;
inline constexpr int kCudaErrorUnknown = 999;

// A Status for a failed driver call, "cuInit failed: CUDA_ERROR_NO_DEVICE
// (no CUDA-capable device is detected)"; its message starts with `call`.
// `name` overrides CudaErrorName(code) (libcuda's cuGetErrorName). The
// CUresult is kept in the message; CudaErrorCodeOf recovers it.
Status CudaCallError(const std::string& call, int code, const std::string& description,
                     const std::string& name = "");
// The CUresult in a Status made by CudaCallError, or 0.
int CudaErrorCodeOf(const Status& status);

}  // namespace ortgpu::gpu
