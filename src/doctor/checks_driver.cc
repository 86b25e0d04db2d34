#include "doctor/checks_driver.h"

#include <algorithm>

#include "gpu/compatibility.h"

namespace ortgpu::doctor {
namespace {

constexpr const char* kInstallDriverFix =
    "install the NVIDIA driver: sudo apt-get install nvidia-driver-580 (Ubuntu: sudo "
    "ubuntu-drivers install), or the data-center driver from https://www.nvidia.com/drivers; "
    "then reboot";
constexpr const char* kContainerDriverFix =
    "run the container with the NVIDIA runtime so the driver libraries are mounted: docker run "
    "--gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility ... (nvidia-container-toolkit on "
    "the host); Kubernetes: request nvidia.com/gpu in resources.limits";

Finding Make(std::string id, Verdict v, std::string title) {
  return MakeFinding(std::move(id), Layer::kDriver, v, std::move(title), /*gpu=*/true);
}

// The common judgement for "a driver library did not load".
void DriverMissing(Finding& f, const HostSummary& host, const std::string& what) {
  if (host.gpu_nodes_present()) {
    f.verdict = Verdict::kFail;
    f.why = "/dev/nvidia0 exists, so the kernel driver is loaded, but " + what +
            " is not: the CUDA EP cannot start without it";
    f.fix = host.in_container() ? kContainerDriverFix : kInstallDriverFix;
  } else if (host.in_container()) {
    f.verdict = Verdict::kSkip;
    f.why = "no GPU was passed into this " + host.container + " container";
    f.fix = kContainerDriverFix;
  } else {
    f.verdict = Verdict::kSkip;
    f.why = "no NVIDIA driver on this machine (no /dev/nvidia* device nodes)";
    f.fix = "nothing to do on a CPU-only machine; on a GPU machine: " +
            std::string(kInstallDriverFix);
  }
}

void CheckLibcuda(const gpu::DriverInfo& info, const HostSummary& host, Report& report) {
  if (!info.cuda_load_status.ok()) {
    Finding f = Make("driver.libcuda", Verdict::kFail, "libcuda.so.1 not loaded");
    f.seen = info.cuda_load_status.message();
    DriverMissing(f, host, "the driver's libcuda.so.1");
    report.Add(std::move(f));
    return;
  }
  Finding f = Make("driver.libcuda", Verdict::kPass, "libcuda loaded from " + info.libcuda_path);
  f.seen = info.libcuda_path + "; supports CUDA up to " +
           gpu::FormatCudaVersion(info.cuda_driver_version);
  f.facts["libcuda_path"] = info.libcuda_path;
  f.facts["cuda_driver_version"] = std::to_string(info.cuda_driver_version);
  report.Add(std::move(f));

  Finding init = Make("driver.cuinit", Verdict::kPass, "cuInit succeeded");
  if (info.cuda_init_status.ok()) {
    const int n = info.CudaDeviceCount();
    init.seen = std::to_string(n) + " CUDA device(s) visible";
    init.facts["cuda_devices"] = std::to_string(n);
    if (n == 0) {
      init.verdict = Verdict::kFail;
      init.title = "CUDA sees no GPU";
      init.why = "the CUDA EP needs at least one CUDA device";
      init.fix = "check nvidia-smi; unset CUDA_VISIBLE_DEVICES";
    }
    report.Add(std::move(init));
    return;
  }
  const int code = gpu::CudaErrorCodeOf(info.cuda_init_status);
  init.verdict = Verdict::kFail;
  init.title = "cuInit failed: " + gpu::CudaErrorName(code);
  init.seen = info.cuda_init_status.message() + " (libcuda " + info.libcuda_path + ")";
  switch (code) {
    case gpu::kCudaErrorNoDevice:
      if (host.cuda_visible_devices_hides_all) {
        init.why = "CUDA_VISIBLE_DEVICES=\"" + host.cuda_visible_devices.value_or("") +
                   "\" hides every GPU";
        init.fix = "unset CUDA_VISIBLE_DEVICES   (or export CUDA_VISIBLE_DEVICES=0)";
      } else {
        init.why = "the driver found no CUDA-capable GPU usable by this process";
        init.fix = host.in_container() ? kContainerDriverFix
                                       : "run nvidia-smi; if it lists no GPU, reinstall the "
                                         "driver (" + std::string(kInstallDriverFix) + ")";
      }
      break;
    case gpu::kCudaErrorStubLibrary:
      init.why = info.libcuda_path + " is the CUDA toolkit's link-time stub, not the driver";
      init.fix = "remove the .../lib64/stubs folder from LD_LIBRARY_PATH so the driver's "
                 "libcuda.so.1 is found (ldconfig -p | grep libcuda)";
      break;
    case gpu::kCudaErrorSystemDriverMismatch:
      init.why = "the loaded kernel module and libcuda come from different driver versions "
                 "(driver upgraded without a reboot)";
      init.fix = "reboot (or reload the modules: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset "
                 "nvidia && sudo modprobe nvidia nvidia_uvm)";
      break;
    case gpu::kCudaErrorCompatNotSupportedOnDevice:
      init.why = "a cuda-compat (forward compatibility) libcuda was loaded, and this GPU does not "
                 "support forward compatibility";
      init.fix = "remove /usr/local/cuda/compat (or the cuda-compat folder) from "
                 "LD_LIBRARY_PATH, or upgrade the driver to one that supports the CUDA runtime";
      break;
    case gpu::kCudaErrorUnknown:
      init.why = host.uvm_node_present
                     ? "the driver reported an internal error (often a GPU in a bad state)"
                     : "/dev/nvidia-uvm is missing: the nvidia-uvm kernel module is not loaded";
      init.fix = host.uvm_node_present
                     ? "check sudo dmesg | grep -i -e NVRM -e Xid; reset the GPU or reboot"
                     : "sudo modprobe nvidia-uvm   (or: sudo nvidia-modprobe -u -c=0)";
      break;
    default:
      init.why = "CUDA cannot initialise, so no CUDA library can run";
      init.fix = "run nvidia-smi and check sudo dmesg | grep -i NVRM for the driver's reason";
  }
  report.Add(std::move(init));
}

void CheckNvml(const gpu::DriverInfo& info, const HostSummary& host, Report& report) {
  if (info.nvml_usable()) {
    Finding f = Make("driver.nvml", Verdict::kPass, "NVML loaded from " + info.nvml_path);
    f.seen = info.nvml_path;
    f.facts["nvml_path"] = info.nvml_path;
    report.Add(std::move(f));
    return;
  }
  Finding f = Make("driver.nvml", Verdict::kWarn, "NVML unavailable");
  f.seen = info.nvml_status.message();
  const std::string& m = info.nvml_status.message();
  if (m.find("LIB_RM_VERSION_MISMATCH") != std::string::npos) {
    f.verdict = Verdict::kFail;
    f.why = "libnvidia-ml and the kernel module come from different driver versions";
    f.fix = "reboot after the driver upgrade (or reload the nvidia kernel modules)";
  } else if (!info.cuda_load_status.ok()) {
    DriverMissing(f, host, "libnvidia-ml.so.1");
  } else {
    f.why = "without NVML, doctor cannot report the driver version string, used memory, "
            "utilisation or MIG mode (CUDA itself still works)";
    f.fix = host.in_container()
                ? "add the utility capability: -e NVIDIA_DRIVER_CAPABILITIES=compute,utility"
                : "install the driver's NVML library (Ubuntu: sudo apt-get install "
                  "libnvidia-compute-<branch>, which ships libnvidia-ml.so.1)";
  }
  report.Add(std::move(f));
}

void CheckVersion(const gpu::DriverInfo& info, Report& report) {
  if (info.driver_version.empty() && info.cuda_driver_version == 0) return;
  const std::string cuda = gpu::FormatCudaVersion(info.cuda_driver_version);
  Finding f = Make("driver.version", Verdict::kInfo,
                   "NVIDIA driver " + (info.driver_version.empty() ? "(version unknown)"
                                                                   : info.driver_version) +
                       ", supports CUDA up to " + cuda);
  f.seen = "driver " + (info.driver_version.empty() ? "unknown (NVML unavailable)"
                                                    : info.driver_version) +
           "; cuDriverGetVersion = " + std::to_string(info.cuda_driver_version) + " (CUDA " +
           cuda + ")";
  f.facts["driver_version"] = info.driver_version;
  f.facts["cuda_driver_version"] = std::to_string(info.cuda_driver_version);
  report.Add(std::move(f));
}

std::string GpuId(const gpu::GpuDevice& d) {
  return d.index >= 0 ? std::to_string(d.index) : "nvml" + std::to_string(d.nvml_index);
}

void CheckDevice(const gpu::DriverInfo& info, const gpu::GpuDevice& d, const HostSummary& host,
                 Report& report) {
  const int cc = d.ComputeCapability();
  const std::string id = GpuId(d);
  Finding f = Make("driver.gpu." + id, Verdict::kPass,
                   "GPU " + id + ": " + d.name + " (" + gpu::ArchName(cc) + ", compute capability " +
                       gpu::FormatComputeCapability(cc) + ")");
  f.seen = "index " + (d.index >= 0 ? std::to_string(d.index) : "none (not visible to CUDA)") +
           ", " + d.name + ", " + d.uuid + ", PCI " + d.pci_bus_id + ", compute capability " +
           gpu::FormatComputeCapability(cc) + ", memory " + gpu::FormatBytes(d.memory_total);
  if (d.memory_used) f.seen += " (" + gpu::FormatBytes(*d.memory_used) + " used)";
  if (d.utilization_gpu) f.seen += ", utilisation " + std::to_string(*d.utilization_gpu) + "%";
  f.seen += std::string(", MIG ") + (d.mig_enabled ? "on" : "off");
  f.facts["index"] = std::to_string(d.index);
  f.facts["name"] = d.name;
  f.facts["uuid"] = d.uuid;
  f.facts["pci_bus_id"] = d.pci_bus_id;
  f.facts["compute_capability"] = gpu::FormatComputeCapability(cc);
  f.facts["memory_total"] = std::to_string(d.memory_total);
  if (d.memory_used) f.facts["memory_used"] = std::to_string(*d.memory_used);
  if (d.utilization_gpu) f.facts["utilization_gpu"] = std::to_string(*d.utilization_gpu);
  f.facts["mig"] = d.mig_enabled ? "on" : "off";
  if (d.mig_enabled) {
    f.verdict = Verdict::kWarn;
    f.why = "MIG is on: CUDA runs only on MIG instances, so CUDA_VISIBLE_DEVICES must name a "
            "MIG instance UUID (MIG-...), not the GPU";
    f.fix = "nvidia-smi -L lists the MIG-... UUIDs; export CUDA_VISIBLE_DEVICES=MIG-<uuid> (or "
            "disable MIG: sudo nvidia-smi -i " + std::to_string(std::max(d.nvml_index, 0)) +
            " -mig 0)";
  } else if (d.index < 0 && info.cuda_usable()) {
    f.verdict = Verdict::kWarn;
    f.why = "NVML lists this GPU but CUDA does not see it";
    f.fix = host.cuda_visible_devices
                ? "add it to CUDA_VISIBLE_DEVICES (now \"" + *host.cuda_visible_devices +
                      "\"), e.g. export CUDA_VISIBLE_DEVICES=" + d.uuid
                : "check nvidia-smi for errors on this GPU";
  }
  report.Add(std::move(f));

  if (info.driver_version.empty()) return;
  const gpu::CompatResult arch = gpu::CheckDriverForArch(info.driver_version, cc);
  Finding a = Make("driver.arch." + id, Verdict::kPass,
                   "driver " + info.driver_version + " supports " + gpu::ArchName(cc) + " (" +
                       d.name + ")");
  a.seen = arch.message;
  a.facts["required_driver"] = arch.required;
  a.facts["source"] = arch.source;
  if (!arch.source.empty()) a.seen += " (source: " + arch.source + ")";
  if (arch.verdict == gpu::CompatVerdict::kIncompatible) {
    a.verdict = Verdict::kFail;
    a.title = "driver " + info.driver_version + " is too old for " + d.name;
    a.why = "a driver older than the GPU's architecture cannot run CUDA on it";
    a.fix = "install NVIDIA driver " + arch.required + " (e.g. sudo apt-get install "
            "nvidia-driver-580) and reboot";
  } else if (arch.verdict == gpu::CompatVerdict::kUnknown) {
    a.verdict = Verdict::kInfo;
    a.title = "architecture of " + d.name + " not in ortgpu's table";
  }
  report.Add(std::move(a));
}

}  // namespace

DriverFacts CheckDriverInfo(const gpu::DriverInfo& info, const HostSummary& host, Report& report) {
  DriverFacts facts;
  facts.info = info;
  facts.driver_version = info.driver_version;
  facts.cuda_driver_version = info.cuda_driver_version;
  CheckLibcuda(info, host, report);
  CheckNvml(info, host, report);
  CheckVersion(info, report);
  for (const auto& d : info.devices) {
    CheckDevice(info, d, host, report);
    if (d.index < 0) continue;
    facts.device_ccs.push_back(d.ComputeCapability());
    const bool arch_ok = info.driver_version.empty() ||
                         gpu::CheckDriverForArch(info.driver_version, d.ComputeCapability())
                                 .verdict != gpu::CompatVerdict::kIncompatible;
    if (info.cuda_usable() && arch_ok) facts.gpu_usable = true;
  }
  return facts;
}

DriverFacts CheckDriver(gpu::GpuDriver& driver, gpu::Nvml& nvml, const HostSummary& host,
                        Report& report) {
  return CheckDriverInfo(gpu::ProbeDriverSources(driver, nvml), host, report);
}

}  // namespace ortgpu::doctor
