#include "gpu/nvml.h"

#include <algorithm>
#include <climits>
#include <vector>

namespace ortgpu::gpu {
namespace {

// The slice of nvml.h used here, declared by hand. nvmlReturn_t is an enum
// (int); nvmlDevice_t an opaque pointer. Struct layouts follow nvml.h.
using NvmlReturn = int;
using NvmlDeviceHandle = void*;
struct NvmlPciInfoV3 {  // nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};
struct NvmlMemoryV1 {  // nvmlMemory_t: total, free, used (in that order)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlMemoryV2 {  // nvmlMemory_v2_t: used excludes the driver's reserved memory
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2): sizeof | (2 << 24).
constexpr unsigned int kNvmlMemoryV2Version =
    static_cast<unsigned int>(sizeof(NvmlMemoryV2)) | (2u << 24);
struct NvmlUtilizationRates {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t used by ..._v3
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kNvmlValueNotAvailable = ULLONG_MAX;

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ErrorStringFn = const char* (*)(NvmlReturn);
using SystemStringFn = NvmlReturn (*)(char*, unsigned int);
using SystemIntFn = NvmlReturn (*)(int*);
using CountFn = NvmlReturn (*)(unsigned int*);
using HandleByIndexFn = NvmlReturn (*)(unsigned int, NvmlDeviceHandle*);
using DeviceStringFn = NvmlReturn (*)(NvmlDeviceHandle, char*, unsigned int);
using PciInfoFn = NvmlReturn (*)(NvmlDeviceHandle, NvmlPciInfoV3*);
using MemoryFn = NvmlReturn (*)(NvmlDeviceHandle, NvmlMemoryV1*);
using MemoryV2Fn = NvmlReturn (*)(NvmlDeviceHandle, NvmlMemoryV2*);
using UtilizationFn = NvmlReturn (*)(NvmlDeviceHandle, NvmlUtilizationRates*);
using MigModeFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*, unsigned int*);
using ComputeCapabilityFn = NvmlReturn (*)(NvmlDeviceHandle, int*, int*);
using ProcessesFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*, NvmlProcessInfo*);
// Health and clock queries (all optional: see Health()). Enums
// (nvmlEnableState_t, nvmlComputeMode_t ...) are ints.
using DeviceIntFn = NvmlReturn (*)(NvmlDeviceHandle, int*);
using DeviceUintFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*);
using DeviceUllFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned long long*);
using EccModeFn = NvmlReturn (*)(NvmlDeviceHandle, int*, int*);
using TotalEccFn = NvmlReturn (*)(NvmlDeviceHandle, int, int, unsigned long long*);
using RetiredPagesFn = NvmlReturn (*)(NvmlDeviceHandle, int, unsigned int*, unsigned long long*);
using RemappedRowsFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*, unsigned int*, unsigned int*, unsigned int*);
using MigHandleFn = NvmlReturn (*)(NvmlDeviceHandle, unsigned int, NvmlDeviceHandle*);
using ProcessNameFn = NvmlReturn (*)(unsigned int, char*, unsigned int);
using ClockFn = NvmlReturn (*)(NvmlDeviceHandle, int, unsigned int*);

constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;             // NVML_VOLATILE_ECC
constexpr int kAggregateEcc = 1;            // NVML_AGGREGATE_ECC
constexpr int kRetiredSbe = 0;              // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
constexpr int kRetiredDbe = 1;              // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
constexpr int kClockSm = 1;                 // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0;          // NVML_TEMPERATURE_GPU
constexpr NvmlReturn kNvmlNotFound = 6;

class RealNvml final : public Nvml {
 public:
  explicit RealNvml(NvmlOptions options) : options_(std::move(options)) {}
  ~RealNvml() override {
    if (initialized_ && shutdown_ != nullptr) shutdown_();
  }

  Status Load() override {
    if (initialized_) return Status::Ok();
    if (handle_ == nullptr) {
      DynamicLoader& loader = *options_.loader;
      ORTGPU_ASSIGN_OR_RETURN(OpenedLibrary lib, OpenLibrary(loader, options_.library, SymbolScope::kLocal));
      path_ = lib.path;
      ORTGPU_RETURN_IF_ERROR(MissingSymbolsError(
          path_, "NVML",
          ResolveSymbols(loader, lib.handle,
                         {FunctionSlot("nvmlInit_v2", init_),
                          FunctionSlot("nvmlShutdown", shutdown_),
                          FunctionSlot("nvmlErrorString", error_string_),
                          FunctionSlot("nvmlSystemGetDriverVersion", driver_version_),
                          FunctionSlot("nvmlSystemGetCudaDriverVersion_v2", cuda_driver_version_),
                          FunctionSlot("nvmlDeviceGetCount_v2", device_count_),
                          FunctionSlot("nvmlDeviceGetHandleByIndex_v2", handle_by_index_),
                          FunctionSlot("nvmlDeviceGetName", name_),
                          FunctionSlot("nvmlDeviceGetUUID", uuid_),
                          FunctionSlot("nvmlDeviceGetPciInfo_v3", pci_info_),
                          FunctionSlot("nvmlDeviceGetMemoryInfo", memory_),
                          FunctionSlot("nvmlDeviceGetUtilizationRates", utilization_),
                          FunctionSlot("nvmlDeviceGetCudaComputeCapability", compute_capability_)}),
          "the NVIDIA driver is too old for ortgpu (install driver >= 525)"));
      // Optional: absent on drivers older than the features.
      ResolveSymbols(loader, lib.handle,
                     {FunctionSlot("nvmlDeviceGetMemoryInfo_v2", memory_v2_),
                      FunctionSlot("nvmlDeviceGetMigMode", mig_mode_),
                      FunctionSlot("nvmlDeviceGetComputeRunningProcesses_v3", processes_),
                      FunctionSlot("nvmlDeviceGetPersistenceMode", persistence_mode_),
                      FunctionSlot("nvmlDeviceGetComputeMode", compute_mode_),
                      FunctionSlot("nvmlDeviceGetEccMode", ecc_mode_),
                      FunctionSlot("nvmlDeviceGetTotalEccErrors", total_ecc_),
                      FunctionSlot("nvmlDeviceGetRetiredPages", retired_pages_),
                      FunctionSlot("nvmlDeviceGetRetiredPagesPendingStatus", retired_pending_),
                      FunctionSlot("nvmlDeviceGetRemappedRows", remapped_rows_),
                      FunctionSlot("nvmlDeviceGetCurrPcieLinkGeneration", pcie_gen_),
                      FunctionSlot("nvmlDeviceGetMaxPcieLinkGeneration", pcie_gen_max_),
                      FunctionSlot("nvmlDeviceGetGpuMaxPcieLinkGeneration", pcie_gen_gpu_max_),
                      FunctionSlot("nvmlDeviceGetCurrPcieLinkWidth", pcie_width_),
                      FunctionSlot("nvmlDeviceGetMaxPcieLinkWidth", pcie_width_max_),
                      FunctionSlot("nvmlDeviceGetMaxMigDeviceCount", max_mig_count_),
                      FunctionSlot("nvmlDeviceGetMigDeviceHandleByIndex", mig_handle_),
                      FunctionSlot("nvmlSystemGetProcessName", process_name_),
                      FunctionSlot("nvmlDeviceGetCurrentClocksEventReasons", event_reasons_),
                      FunctionSlot("nvmlDeviceGetCurrentClocksThrottleReasons", throttle_reasons_),
                      FunctionSlot("nvmlDeviceGetClockInfo", clock_info_),
                      FunctionSlot("nvmlDeviceGetMaxClockInfo", max_clock_info_),
                      FunctionSlot("nvmlDeviceGetPowerUsage", power_usage_),
                      FunctionSlot("nvmlDeviceGetEnforcedPowerLimit", power_limit_),
                      FunctionSlot("nvmlDeviceGetTemperature", temperature_)});
      handle_ = lib.handle;
    }
    if (NvmlReturn r = init_(); r != 0) return Error("nvmlInit_v2", r);
    initialized_ = true;
    return Status::Ok();
  }

  std::string LibraryPath() const override { return handle_ != nullptr ? path_ : ""; }

  Expected<std::string> DriverVersion() override {
    ORTGPU_RETURN_IF_ERROR(RequireInit());
    char buf[96] = {};
    if (NvmlReturn r = driver_version_(buf, sizeof(buf) - 1); r != 0) {
      return Error("nvmlSystemGetDriverVersion", r);
    }
    return std::string(buf);
  }

  Expected<int> CudaDriverVersion() override {
    ORTGPU_RETURN_IF_ERROR(RequireInit());
    int v = 0;
    if (NvmlReturn r = cuda_driver_version_(&v); r != 0) {
      return Error("nvmlSystemGetCudaDriverVersion_v2", r);
    }
    return v;
  }

  Expected<unsigned> DeviceCount() override {
    ORTGPU_RETURN_IF_ERROR(RequireInit());
    unsigned n = 0;
    if (NvmlReturn r = device_count_(&n); r != 0) return Error("nvmlDeviceGetCount_v2", r);
    return n;
  }

  Expected<NvmlDevice> Device(unsigned index) override {
    ORTGPU_ASSIGN_OR_RETURN(NvmlDeviceHandle h, Handle(index));
    NvmlDevice d;
    d.index = index;
    char buf[128] = {};
    if (NvmlReturn r = name_(h, buf, sizeof(buf) - 1); r != 0) return Error("nvmlDeviceGetName", r);
    d.name = buf;
    char uuid[96] = {};
    if (NvmlReturn r = uuid_(h, uuid, sizeof(uuid) - 1); r != 0) {
      return Error("nvmlDeviceGetUUID", r);
    }
    d.uuid = uuid;
    NvmlPciInfoV3 pci{};
    if (NvmlReturn r = pci_info_(h, &pci); r != 0) return Error("nvmlDeviceGetPciInfo_v3", r);
    d.pci_bus_id = pci.bus_id;
    if (NvmlReturn r = compute_capability_(h, &d.cc_major, &d.cc_minor); r != 0) {
      return Error("nvmlDeviceGetCudaComputeCapability", r);
    }
    ORTGPU_ASSIGN_OR_RETURN(d.memory, Memory(index));
    NvmlUtilizationRates util{};
    if (utilization_(h, &util) == 0) {
      d.utilization_gpu = util.gpu;
      d.utilization_memory = util.memory;
    }
    unsigned current = 0, pending = 0;
    if (mig_mode_ != nullptr && mig_mode_(h, &current, &pending) == 0) {
      d.mig_current = current == 1;  // NVML_DEVICE_MIG_ENABLE
      d.mig_pending = pending == 1;
    }
    return d;
  }

  Expected<NvmlMemory> Memory(unsigned index) override {
    ORTGPU_ASSIGN_OR_RETURN(NvmlDeviceHandle h, Handle(index));
    // v2 reports "used" as nvidia-smi does (without the driver's reserved
    // memory); v1 counts the reserved part as used.
    if (memory_v2_ != nullptr) {
      NvmlMemoryV2 m2{};
      m2.version = kNvmlMemoryV2Version;
      if (memory_v2_(h, &m2) == 0) return NvmlMemory{m2.total, m2.used, m2.free};
    }
    NvmlMemoryV1 m{};
    if (NvmlReturn r = memory_(h, &m); r != 0) return Error("nvmlDeviceGetMemoryInfo", r);
    return NvmlMemory{m.total, m.used, m.free};
  }

  Expected<uint64_t> ProcessMemoryUsed(unsigned index, uint32_t pid) override {
    ORTGPU_ASSIGN_OR_RETURN(NvmlDeviceHandle h, Handle(index));
    ORTGPU_ASSIGN_OR_RETURN(std::vector<NvmlProcessInfo> procs, Processes(h));
    for (const auto& p : procs) {
      if (p.pid != pid) continue;
      if (p.used_gpu_memory == kNvmlValueNotAvailable) {
        return Unavailable("NVML lists process " + std::to_string(pid) + " on GPU " +
                           std::to_string(index) + " but cannot report its memory");
      }
      return static_cast<uint64_t>(p.used_gpu_memory);
    }
    return NotFound("process " + std::to_string(pid) + " holds no CUDA context on GPU " +
                    std::to_string(index) + " (inside a container NVML lists host pids)");
  }

  Expected<NvmlHealth> Health(unsigned index) override {
    ORTGPU_ASSIGN_OR_RETURN(NvmlDeviceHandle h, Handle(index));
    NvmlHealth out;
    auto& why = out.not_checked;
    int mode = 0;
    if (Query(why, "persistence_mode", "nvmlDeviceGetPersistenceMode", persistence_mode_, h, &mode)) {
      out.persistence_mode = mode == 1;  // NVML_FEATURE_ENABLED
    }
    if (Query(why, "compute_mode", "nvmlDeviceGetComputeMode", compute_mode_, h, &mode)) out.compute_mode = mode;
    int current = 0, pending = 0;
    if (Query(why, "ecc", "nvmlDeviceGetEccMode", ecc_mode_, h, &current, &pending)) {
      out.ecc_current = current == 1;
      out.ecc_pending = pending == 1;
      unsigned long long n = 0;
      if (*out.ecc_current &&
          Query(why, "ecc", "nvmlDeviceGetTotalEccErrors", total_ecc_, h, kMemoryErrorUncorrected, kVolatileEcc, &n)) {
        out.ecc_uncorrected_volatile = n;
        if (Query(why, "ecc", "nvmlDeviceGetTotalEccErrors", total_ecc_, h, kMemoryErrorUncorrected, kAggregateEcc, &n)) {
          out.ecc_uncorrected_aggregate = n;
        }
      }
    }
    ReadRetiredPages(h, out);
    unsigned corr = 0, unc = 0, is_pending = 0, failure = 0;
    if (Query(why, "row_remap", "nvmlDeviceGetRemappedRows", remapped_rows_, h, &corr, &unc, &is_pending, &failure)) {
      out.remapped_rows_correctable = corr;
      out.remapped_rows_uncorrectable = unc;
      out.row_remap_pending = is_pending != 0;
      out.row_remap_failure = failure != 0;
    }
    unsigned v = 0;
    if (Query(why, "pcie", "nvmlDeviceGetCurrPcieLinkGeneration", pcie_gen_, h, &v)) out.pcie_gen = v;
    if (Query(why, "pcie", "nvmlDeviceGetMaxPcieLinkGeneration", pcie_gen_max_, h, &v)) out.pcie_gen_max = v;
    if (Query(why, "pcie_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", pcie_gen_gpu_max_, h, &v)) {
      out.pcie_gen_gpu_max = v;
    }
    if (Query(why, "pcie", "nvmlDeviceGetCurrPcieLinkWidth", pcie_width_, h, &v)) out.pcie_width = v;
    if (Query(why, "pcie", "nvmlDeviceGetMaxPcieLinkWidth", pcie_width_max_, h, &v)) out.pcie_width_max = v;
    ReadMigInstances(h, out);
    auto procs = Processes(h);
    if (!procs.ok()) {
      why["processes"] = procs.status().message();
    } else {
      std::vector<NvmlProcess> list;
      for (const auto& p : *procs) {
        NvmlProcess np;
        np.pid = p.pid;
        if (p.used_gpu_memory != kNvmlValueNotAvailable) np.used_memory = p.used_gpu_memory;
        char name[256] = {};
        if (process_name_ != nullptr && process_name_(p.pid, name, sizeof(name) - 1) == 0) np.name = name;
        list.push_back(std::move(np));
      }
      out.processes = std::move(list);
    }
    return out;
  }

  Expected<NvmlClockSample> SampleClocks(unsigned index) override {
    ORTGPU_ASSIGN_OR_RETURN(NvmlDeviceHandle h, Handle(index));
    NvmlClockSample out;
    auto& why = out.not_checked;
    unsigned long long reasons = 0;
    if (event_reasons_ != nullptr || throttle_reasons_ == nullptr) {
      if (Query(why, "clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", event_reasons_, h, &reasons)) {
        out.event_reasons = reasons;
      }
    } else if (Query(why, "clock_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", throttle_reasons_, h,
                     &reasons)) {
      out.event_reasons = reasons;
    }
    unsigned v = 0;
    if (Query(why, "sm_clock", "nvmlDeviceGetClockInfo", clock_info_, h, kClockSm, &v)) out.sm_clock_mhz = v;
    if (Query(why, "sm_clock", "nvmlDeviceGetMaxClockInfo", max_clock_info_, h, kClockSm, &v)) out.sm_clock_max_mhz = v;
    if (Query(why, "power", "nvmlDeviceGetPowerUsage", power_usage_, h, &v)) out.power_mw = v;
    if (Query(why, "power", "nvmlDeviceGetEnforcedPowerLimit", power_limit_, h, &v)) out.power_limit_mw = v;
    if (Query(why, "temperature", "nvmlDeviceGetTemperature", temperature_, h, kTemperatureGpu, &v)) {
      out.temperature_c = v;
    }
    if (Query(why, "pcie", "nvmlDeviceGetCurrPcieLinkGeneration", pcie_gen_, h, &v)) out.pcie_gen = v;
    if (Query(why, "pcie", "nvmlDeviceGetCurrPcieLinkWidth", pcie_width_, h, &v)) out.pcie_width = v;
    return out;
  }

 private:
  // Calls an optional entry point; on success returns true. Otherwise
  // records under `group` why the value is unknown (first reason kept) and
  // returns false: the driver lacks the symbol, or NVML refused.
  template <typename Fn, typename... Args>
  bool Query(std::map<std::string, std::string>& why, const char* group, const char* call, Fn fn, Args... args) {
    if (fn == nullptr) {
      why.emplace(group, path_ + " lacks " + call + " (an older driver): not checked");
      return false;
    }
    const NvmlReturn r = fn(args...);
    if (r == 0) return true;
    why.emplace(group, r == kNvmlErrorNotSupported ? std::string(call) + ": not supported on this GPU"
                                                   : Error(call, r).message());
    return false;
  }

  // Retired pages exist before Ampere; later GPUs answer NOT_SUPPORTED and
  // remap rows instead. With a zero-sized buffer NVML returns the count
  // (INSUFFICIENT_SIZE when it is not zero).
  void ReadRetiredPages(NvmlDeviceHandle h, NvmlHealth& out) {
    auto& why = out.not_checked;
    for (int cause : {kRetiredDbe, kRetiredSbe}) {
      if (retired_pages_ == nullptr) {
        why.emplace("retired_pages", path_ + " lacks nvmlDeviceGetRetiredPages (an older driver): not checked");
        return;
      }
      unsigned count = 0;
      const NvmlReturn r = retired_pages_(h, cause, &count, nullptr);
      if (r != 0 && r != kNvmlErrorInsufficientSize) {
        why.emplace("retired_pages", r == kNvmlErrorNotSupported
                                         ? "nvmlDeviceGetRetiredPages: not supported on this GPU"
                                         : Error("nvmlDeviceGetRetiredPages", r).message());
        return;
      }
      (cause == kRetiredDbe ? out.retired_pages_dbe : out.retired_pages_sbe) = count;
    }
    int pending = 0;
    if (Query(why, "retired_pages", "nvmlDeviceGetRetiredPagesPendingStatus", retired_pending_, h, &pending)) {
      out.retired_pages_pending = pending == 1;
    }
  }

  void ReadMigInstances(NvmlDeviceHandle h, NvmlHealth& out) {
    unsigned current = 0, pending = 0;
    if (mig_mode_ == nullptr || mig_mode_(h, &current, &pending) != 0 || current != 1) return;
    unsigned max = 0;
    if (!Query(out.not_checked, "mig_instances", "nvmlDeviceGetMaxMigDeviceCount", max_mig_count_, h, &max)) return;
    if (mig_handle_ == nullptr) {
      out.not_checked.emplace("mig_instances", path_ + " lacks nvmlDeviceGetMigDeviceHandleByIndex: not checked");
      return;
    }
    std::vector<NvmlMigInstance> list;
    for (unsigned i = 0; i < max; ++i) {
      NvmlDeviceHandle mig = nullptr;
      const NvmlReturn r = mig_handle_(h, i, &mig);
      if (r == kNvmlNotFound) continue;  // no instance in this slot
      if (r != 0) {
        out.not_checked.emplace("mig_instances", Error("nvmlDeviceGetMigDeviceHandleByIndex", r).message());
        return;
      }
      NvmlMigInstance m;
      char uuid[96] = {};
      if (uuid_(mig, uuid, sizeof(uuid) - 1) == 0) m.uuid = uuid;
      NvmlMemoryV1 mem{};
      if (memory_(mig, &mem) == 0) {
        m.memory_total = mem.total;
        m.memory_used = mem.used;
        m.memory_free = mem.free;
      }
      list.push_back(std::move(m));
    }
    out.mig_instances = std::move(list);
  }

  // Every process with a context on `h`. The list can grow between the
  // sizing call and the fetch: retry with the size NVML reports, plus slack.
  Expected<std::vector<NvmlProcessInfo>> Processes(NvmlDeviceHandle h) {
    if (processes_ == nullptr) {
      return Unavailable(path_ + " lacks nvmlDeviceGetComputeRunningProcesses_v3 (driver < 510)");
    }
    std::vector<NvmlProcessInfo> procs;
    unsigned count = 0;
    NvmlReturn r = processes_(h, &count, nullptr);
    for (int attempt = 0; r == kNvmlErrorInsufficientSize && attempt < 4; ++attempt) {
      procs.resize(count + 8);
      count = static_cast<unsigned>(procs.size());
      r = processes_(h, &count, procs.data());
    }
    if (r != 0) return Error("nvmlDeviceGetComputeRunningProcesses_v3", r);
    procs.resize(std::min<size_t>(count, procs.size()));
    return procs;
  }

  Status RequireInit() const {
    if (!initialized_) return FailedPrecondition("NVML is not initialised: call Load() first");
    return Status::Ok();
  }

  Expected<NvmlDeviceHandle> Handle(unsigned index) {
    ORTGPU_RETURN_IF_ERROR(RequireInit());
    NvmlDeviceHandle h = nullptr;
    if (NvmlReturn r = handle_by_index_(index, &h); r != 0) {
      return Error("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ")", r);
    }
    return h;
  }

  Status Error(const std::string& call, NvmlReturn r) const {
    std::string text = NvmlErrorText(r);
    // Codes the table above does not name get the library's own wording.
    if (error_string_ != nullptr && text.rfind("NVML error ", 0) == 0) {
      if (const char* s = error_string_(r)) text += std::string(" (") + s + ")";
    }
    const Code c = r == kNvmlErrorNotSupported ? Code::kUnimplemented
                 : r == 6 ? Code::kNotFound  // NVML_ERROR_NOT_FOUND
                          : Code::kUnavailable;
    return Status(c, call + " failed: " + text);
  }

  NvmlOptions options_;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::string path_;
  InitFn init_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ErrorStringFn error_string_ = nullptr;
  SystemStringFn driver_version_ = nullptr;
  SystemIntFn cuda_driver_version_ = nullptr;
  CountFn device_count_ = nullptr;
  HandleByIndexFn handle_by_index_ = nullptr;
  DeviceStringFn name_ = nullptr;
  DeviceStringFn uuid_ = nullptr;
  PciInfoFn pci_info_ = nullptr;
  MemoryFn memory_ = nullptr;
  MemoryV2Fn memory_v2_ = nullptr;
  UtilizationFn utilization_ = nullptr;
  MigModeFn mig_mode_ = nullptr;
  ComputeCapabilityFn compute_capability_ = nullptr;
  ProcessesFn processes_ = nullptr;
  DeviceIntFn persistence_mode_ = nullptr;
  DeviceIntFn compute_mode_ = nullptr;
  EccModeFn ecc_mode_ = nullptr;
  TotalEccFn total_ecc_ = nullptr;
  RetiredPagesFn retired_pages_ = nullptr;
  DeviceIntFn retired_pending_ = nullptr;
  RemappedRowsFn remapped_rows_ = nullptr;
  DeviceUintFn pcie_gen_ = nullptr;
  DeviceUintFn pcie_gen_max_ = nullptr;
  DeviceUintFn pcie_gen_gpu_max_ = nullptr;
  DeviceUintFn pcie_width_ = nullptr;
  DeviceUintFn pcie_width_max_ = nullptr;
  DeviceUintFn max_mig_count_ = nullptr;
  MigHandleFn mig_handle_ = nullptr;
  ProcessNameFn process_name_ = nullptr;
  DeviceUllFn event_reasons_ = nullptr;
  DeviceUllFn throttle_reasons_ = nullptr;
  ClockFn clock_info_ = nullptr;
  ClockFn max_clock_info_ = nullptr;
  DeviceUintFn power_usage_ = nullptr;
  DeviceUintFn power_limit_ = nullptr;
  ClockFn temperature_ = nullptr;
};

}  // namespace

std::unique_ptr<Nvml> NewNvml(const NvmlOptions& options) {
  return std::make_unique<RealNvml>(options);
}

Expected<std::vector<ProcessOnGpu>> ProcessGpus(Nvml& nvml, uint32_t pid) {
  ORTGPU_ASSIGN_OR_RETURN(unsigned count, nvml.DeviceCount());
  std::vector<ProcessOnGpu> out;
  for (unsigned i = 0; i < count; ++i) {
    ProcessOnGpu p;
    p.index = i;
    auto used = nvml.ProcessMemoryUsed(i, pid);
    if (used.ok()) {
      p.listed = true;
      p.memory = *used;
    } else if (used.status().code() == Code::kUnavailable) {
      p.listed = true;  // listed, memory not attributed
    } else if (used.status().code() != Code::kNotFound) {
      p.error = used.status().message();
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string NvmlErrorText(int code) {
  // Names and wording from nvml.h's nvmlReturn_t documentation.
  switch (code) {
    case 0: return "NVML_SUCCESS";
    case 1: return "NVML_ERROR_UNINITIALIZED (NVML was not first initialized with nvmlInit)";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT (a supplied argument is invalid)";
    case 3: return "NVML_ERROR_NOT_SUPPORTED (the device does not support this feature)";
    case 4: return "NVML_ERROR_NO_PERMISSION (the current user does not have permission)";
    case 6: return "NVML_ERROR_NOT_FOUND (a query to find an object was unsuccessful)";
    case 7: return "NVML_ERROR_INSUFFICIENT_SIZE (an input argument is not large enough)";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED (NVIDIA driver is not loaded)";
    case 10: return "NVML_ERROR_TIMEOUT (user provided timeout passed)";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND (NVML shared library could not be found)";
    case 13: return "NVML_ERROR_FUNCTION_NOT_FOUND (local version of NVML lacks this function)";
    case 15: return "NVML_ERROR_GPU_IS_LOST (the GPU has fallen off the bus or is otherwise inaccessible)";
    case 16: return "NVML_ERROR_RESET_REQUIRED (the GPU requires a reset)";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM (the GPU control device has been blocked by the OS/cgroups)";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH (RM detects a driver/library version mismatch)";
    case 19: return "NVML_ERROR_IN_USE (an operation cannot be performed because the GPU is in use)";
    case 20: return "NVML_ERROR_MEMORY (insufficient memory)";
    case 21: return "NVML_ERROR_NO_DATA (no data)";
    case 999: return "NVML_ERROR_UNKNOWN (an internal driver error occurred)";
    default: return "NVML error " + std::to_string(code);
  }
}

}  // namespace ortgpu::gpu
