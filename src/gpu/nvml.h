// Nvml: the NVIDIA Management Library (libnvidia-ml.so.1) behind an
// interface, for what the CUDA driver API cannot say without a context: the
// driver's own version string, used memory, utilisation, MIG mode, the
// memory a given process holds, and the GPU's health (Health: persistence and
// compute mode, ECC, memory repair, PCIe link, MIG instances, other processes;
// SampleClocks: clock event reasons and clocks, read while work runs). FakeNvml (tests/fakes/fake_nvml.h) stands in
// for it in tests.
//
// The real implementation (NewNvml) opens the library with dlopen and
// declares its entry points by hand. Devices are addressed by NVML index
// (PCI bus order, not affected by CUDA_VISIBLE_DEVICES; match them to CUDA
// devices by UUID). Not thread-safe: callers serialise (bench samples memory
// from one thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// One process holding a CUDA context on a device
// (nvmlDeviceGetComputeRunningProcesses_v3).
struct NvmlProcess {
  uint32_t pid = 0;                      // as the host sees it (not a container's pid)
  std::optional<uint64_t> used_memory;   // bytes; unset when NVML cannot attribute it
  std::string name;                      // nvmlSystemGetProcessName; "" when unknown
};

// One MIG instance of a GPU in MIG mode (nvmlDeviceGetMigDeviceHandleByIndex).
// Its memory is its own slice (nvmlDeviceGetMemoryInfo on the instance's
// handle), not the GPU's; all three 0 when NVML would not say.
struct NvmlMigInstance {
  std::string uuid;           // "MIG-..." as nvidia-smi -L prints it
  uint64_t memory_total = 0;  // bytes
  uint64_t memory_used = 0;
  uint64_t memory_free = 0;
};

// NVML_COMPUTEMODE_*.
inline constexpr int kNvmlComputeModeDefault = 0;
inline constexpr int kNvmlComputeModeExclusiveThread = 1;
inline constexpr int kNvmlComputeModeProhibited = 2;
inline constexpr int kNvmlComputeModeExclusiveProcess = 3;

// The health of one device. Every field is optional: NVML refuses some
// queries on some boards (ECC on GeForce, retired pages on Ampere and later,
// which remap rows instead) and old drivers lack some entry points. A field
// left unset has its reason in `not_checked`, keyed by the field's group
// ("persistence_mode", "compute_mode", "ecc", "retired_pages", "row_remap",
// "pcie", "mig_instances", "processes"): the NVML call and its error, or the
// entry point the driver lacks.
struct NvmlHealth {
  std::optional<bool> persistence_mode;  // nvmlDeviceGetPersistenceMode
  std::optional<int> compute_mode;       // kNvmlComputeMode*
  std::optional<bool> ecc_current;       // nvmlDeviceGetEccMode
  std::optional<bool> ecc_pending;       // after the next reboot
  // nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE / AGGREGATE): since the
  // driver loaded / over the board's life.
  std::optional<uint64_t> ecc_uncorrected_volatile;
  std::optional<uint64_t> ecc_uncorrected_aggregate;
  // nvmlDeviceGetRetiredPages (pre-Ampere): pages retired for double-bit and
  // for repeated single-bit errors; a retirement waiting for a GPU reset.
  std::optional<unsigned> retired_pages_dbe;
  std::optional<unsigned> retired_pages_sbe;
  std::optional<bool> retired_pages_pending;
  // nvmlDeviceGetRemappedRows (Ampere and later).
  std::optional<unsigned> remapped_rows_correctable;
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> row_remap_pending;   // a remap waits for a GPU reset
  std::optional<bool> row_remap_failure;   // a row could not be remapped
  // PCIe link: now, the most this GPU in this slot can train to
  // (nvmlDeviceGetMaxPcieLinkGeneration/Width), and the GPU's own maximum
  // (nvmlDeviceGetGpuMaxPcieLinkGeneration, r510+). An idle GPU lowers its
  // link generation to save power: read the current values under load.
  std::optional<unsigned> pcie_gen;
  std::optional<unsigned> pcie_gen_max;
  std::optional<unsigned> pcie_gen_gpu_max;
  std::optional<unsigned> pcie_width;
  std::optional<unsigned> pcie_width_max;
  // MIG instances, listed only when MIG mode is on.
  std::optional<std::vector<NvmlMigInstance>> mig_instances;
  // Every process with a CUDA context on the device.
  std::optional<std::vector<NvmlProcess>> processes;
  std::map<std::string, std::string> not_checked;
};

// nvmlClocksEventReasons bits (nvml.h; "throttle reasons" before r535).
inline constexpr uint64_t kClocksEventGpuIdle = 0x1;
inline constexpr uint64_t kClocksEventApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr uint64_t kClocksEventSyncBoost = 0x10;
inline constexpr uint64_t kClocksEventSwThermalSlowdown = 0x20;
inline constexpr uint64_t kClocksEventHwThermalSlowdown = 0x40;
inline constexpr uint64_t kClocksEventHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kClocksEventDisplayClockSetting = 0x100;

// One reading of what limits the clocks now, for sampling while work runs.
// Unset fields have their reason in `not_checked` ("clock_event_reasons",
// "sm_clock", "power", "temperature", "pcie").
struct NvmlClockSample {
  std::optional<uint64_t> event_reasons;      // kClocksEvent* bits
  std::optional<unsigned> sm_clock_mhz;       // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  std::optional<unsigned> sm_clock_max_mhz;   // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)
  std::optional<unsigned> power_mw;           // nvmlDeviceGetPowerUsage
  std::optional<unsigned> power_limit_mw;     // nvmlDeviceGetEnforcedPowerLimit
  std::optional<unsigned> temperature_c;      // nvmlDeviceGetTemperature(GPU)
  std::optional<unsigned> pcie_gen;           // the link generation now
  std::optional<unsigned> pcie_width;
  std::map<std::string, std::string> not_checked;
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
  // The health of device `index`. Fails only when the device cannot be
  // addressed; each query NVML refuses is recorded in not_checked.
  virtual Expected<NvmlHealth> Health(unsigned index) = 0;
  // What limits device `index`'s clocks now. Fails only when the device
  // cannot be addressed.
  virtual Expected<NvmlClockSample> SampleClocks(unsigned index) = 0;
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

// Where process `pid` holds a CUDA context: for each GPU NVML lists (by
// index), whether the process is listed there (`listed`), its memory when
// NVML says it (`memory`), and the error of a list NVML would not give
// (`error`, not listed then). DeviceCount's error when there is none.
struct ProcessOnGpu {
  unsigned index = 0;
  bool listed = false;
  std::optional<uint64_t> memory;
  std::string error;
};
Expected<std::vector<ProcessOnGpu>> ProcessGpus(Nvml& nvml, uint32_t pid);

// NVML_ERROR_* names and nvmlErrorString-like text for an nvmlReturn_t:
// NvmlErrorText(9) == "NVML_ERROR_DRIVER_NOT_LOADED (NVIDIA driver is not loaded)".
std::string NvmlErrorText(int code);

inline constexpr int kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlErrorInsufficientSize = 7;
inline constexpr int kNvmlErrorDriverNotLoaded = 9;
inline constexpr int kNvmlErrorLibRmVersionMismatch = 18;

}  // namespace ortgpu::gpu
