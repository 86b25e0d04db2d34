#include "doctor/doctor.h"

#include <unistd.h>

#include <cstdlib>
#include <set>
#include <optional>

#include "doctor/checks_compat.h"
#include "doctor/checks_contexts.h"
#include "doctor/checks_driver.h"
#include "doctor/checks_environment.h"
#include "doctor/checks_health.h"
#include "doctor/checks_libraries.h"
#include "doctor/checks_precision.h"
#include "doctor/checks_runtime.h"
#include "doctor/checks_tensorrt.h"
#include "gpu/compatibility.h"
#include "gpu/elf_reader.h"
#include "gpu/fatbin.h"
#include "gpu/library_probe.h"
#include "ort/runtime.h"

namespace ortgpu::doctor {
namespace {

struct EpFile {
  std::string path;
  std::vector<std::string> needed;
  std::set<int> cubin;
  std::set<int> ptx;
  std::string error;
  std::optional<gpu::ElfReader> elf;  // kept for the library probe's symbol check
};

// Reads the EP's NEEDED list and fatbin architectures with ranged reads: its
// headers, dynamic tables and fatbin headers, not the 230 MB file.
EpFile ReadEpFile(const FileSystem& fs, const std::string& path) {
  EpFile ep;
  ep.path = path;
  auto elf = gpu::ElfReader::Open(fs, path);
  if (!elf.ok()) {
    ep.error = elf.status().message();
    return ep;
  }
  ep.needed = elf->needed();
  auto archs = gpu::ParseFatbinOfLibrary(*elf);
  if (archs.ok()) {
    ep.cubin = archs->cubin;
    ep.ptx = archs->ptx;
  }
  ep.elf = std::move(elf).value();
  return ep;
}

// The CUDA major an EP was built for, from the libcudart.so.N it NEEDs; 0
// when it needs none.
int CudaMajorOf(const std::vector<std::string>& needed) {
  for (const auto& n : needed) {
    if (n.rfind("libcudart.so.", 0) == 0) return std::atoi(n.c_str() + 13);
  }
  return 0;
}

// The TensorRT EP next to the CUDA one: its NEEDED TensorRT libraries and
// where the loader would find them (no loading: TensorRT is large).
TensorRtObservation ObserveTensorRtLibraries(const FileSystem& fs, const gpu::LibrarySearch& search,
                                             const std::string& cuda_ep_path) {
  TensorRtObservation obs;
  obs.ep_library = JoinPath(DirName(cuda_ep_path), "libonnxruntime_providers_tensorrt.so");
  obs.ep_present = fs.Exists(obs.ep_library);
  if (!obs.ep_present) return obs;
  auto elf = gpu::ElfReader::Open(fs, obs.ep_library);
  if (!elf.ok()) {
    obs.ep_error = elf.status().message();
    return obs;
  }
  obs.cuda_major = CudaMajorOf(elf->needed());
  for (const auto& soname : TensorRtSonames(elf->needed())) {
    TensorRtLibrary lib;
    lib.soname = soname;
    const gpu::LibrarySearchResult found = search.Find(soname);
    if (found.loader_pick) {
      lib.path = found.loader_pick->path;
      lib.version = gpu::VersionFromFileName(found.loader_pick->real_path);
    }
    for (const auto& c : found.other_copies) {
      const std::string v = gpu::VersionFromFileName(c.real_path);
      lib.other_copies.push_back(c.path + (v.empty() ? "" : " (" + v + ")"));
    }
    obs.libraries.push_back(std::move(lib));
  }
  return obs;
}

// Layer 2b's ground: the --device GPU in NVML, its health read before this
// process makes a CUDA context (so every process listed is another one),
// then the copy test. Under MIG the CUDA device is an instance; its GPU is
// the NVML device listing that instance.
HealthObservation ObserveHealth(const DoctorOptions& options, DoctorSeams& seams, const DriverFacts& driver,
                                const HostSummary& host) {
  HealthObservation obs;
  obs.cuda_index = options.observe.device_id;
  obs.cuda_visible_devices = host.cuda_visible_devices;
  obs.in_container = host.in_container();
  obs.own_pid = seams.pid != 0 ? seams.pid : static_cast<uint32_t>(::getpid());
  const gpu::DriverInfo& info = driver.info;
  if (!info.nvml_usable()) {
    obs.skip_reason = "NVML unavailable (driver.nvml): " + info.nvml_status.message();
    return obs;
  }
  const gpu::GpuDevice* cuda = nullptr;
  for (const auto& d : info.devices) {
    if (d.index == obs.cuda_index) cuda = &d;
  }
  const gpu::GpuDevice* target = cuda != nullptr && cuda->nvml_index >= 0 ? cuda : nullptr;
  std::optional<gpu::NvmlHealth> health;
  if (target == nullptr) {
    for (const auto& d : info.devices) {
      if (d.nvml_index < 0 || !d.mig_enabled || cuda == nullptr) continue;
      auto h = seams.nvml->Health(static_cast<unsigned>(d.nvml_index));
      if (!h.ok() || !h->mig_instances) continue;
      for (const auto& m : *h->mig_instances) {
        if (gpu::SameDeviceUuid(m.uuid, cuda->uuid)) {
          target = &d;
          health = std::move(h).value();
          break;
        }
      }
      if (target != nullptr) break;
    }
  }
  if (target == nullptr) {
    int nvml_devices = 0;
    for (const auto& d : info.devices) nvml_devices += d.nvml_index >= 0;
    for (const auto& d : info.devices) {
      if (nvml_devices == 1 && d.nvml_index >= 0) target = &d;
    }
  }
  if (target == nullptr) {
    obs.skip_reason = "CUDA device " + std::to_string(obs.cuda_index) + " matches no GPU NVML lists";
    return obs;
  }
  obs.nvml_index = target->nvml_index;
  obs.name = target->name;
  obs.cuda_uuid = cuda != nullptr ? cuda->uuid : "";
  obs.memory_total = target->memory_total;
  obs.mig_enabled = target->mig_enabled;
  if (!health) {
    auto h = seams.nvml->Health(static_cast<unsigned>(target->nvml_index));
    if (!h.ok()) {
      obs.skip_reason = h.status().message();
      return obs;
    }
    health = std::move(h).value();
  }
  obs.health = std::move(*health);
  if (!options.copy_test) {
    obs.copy_skip_reason = "the copy test was turned off";
  } else if (!driver.gpu_usable || cuda == nullptr) {
    obs.copy_skip_reason = "no usable CUDA device " + std::to_string(obs.cuda_index) + " (driver layer)";
  } else {
    auto copies = seams.driver->MeasureCopyBandwidth(obs.cuda_index, options.copy);
    if (copies.ok()) {
      obs.copies = *copies;
    } else {
      obs.copy_skip_reason = copies.status().message();
    }
  }
  return obs;
}

// Compute capability of CUDA device `index`; 0 when CUDA does not list it.
int CudaDeviceCc(const gpu::DriverInfo& info, int index) {
  for (const auto& d : info.devices) {
    if (d.index == index) return d.ComputeCapability();
  }
  return 0;
}

}  // namespace

Report RunDoctor(const DoctorOptions& options, DoctorSeams& seams) {
  Report report;
  // 1. Host.
  HostSummary host = CheckHost(HostCheckInputs{*seams.fs, *seams.env, seams.host}, report);
  // 2. Driver and GPUs.
  DriverFacts driver = CheckDriver(*seams.driver, *seams.nvml, host, report);
  CheckGpuPrecision(driver.info, report);
  // 2b. Health: observed now, judged after the end-to-end run sampled the clocks.
  HealthObservation health = ObserveHealth(options, seams, driver, host);

  // 3. CUDA libraries.
  std::string ep_path = seams.ep_library_path;
  const std::string& ort_version = seams.ort_version;
  if (options.run_onnxruntime && ep_path.empty()) {
    ep_path = JoinPath(DirName(Runtime::Get().LibraryPath()), "libonnxruntime_providers_cuda.so");
  }
  EpFile ep = ReadEpFile(*seams.fs, ep_path);
  gpu::LibraryProbeOptions probe;
  probe.load_libraries = driver.gpu_usable && seams.loader != nullptr;
  probe.ep_library_path = ep.error.empty() ? ep_path : "";
  probe.ep_library = ep.elf ? &*ep.elf : nullptr;
  LibraryCheckInputs libs;
  libs.libraries = gpu::ProbeCudaLibraries(*seams.fs, *seams.search, seams.loader, probe);
  libs.preload = seams.preload;
  libs.gpu_usable = driver.gpu_usable;
  libs.ep_path = ep_path;
  libs.ep_needed = ep.needed;
  libs.ep_error = ep.error;
  LibraryFacts lib_facts = CheckLibraries(libs, report);

  // 4. Compatibility.
  CompatInputs compat;
  compat.ort_version = ort_version;
  compat.cuda_runtime_version = lib_facts.cudart_version;
  compat.cudnn_version = lib_facts.cudnn_version;
  compat.cudnn_cuda_major = lib_facts.cudnn_cuda_major;
  if (!driver.driver_version.empty()) compat.driver_version = driver.driver_version;
  compat.device_ccs = driver.device_ccs;
  compat.ep_cubin_archs = ep.cubin;
  compat.ep_ptx_archs = ep.ptx;
  // The EP's own NEEDED list says which CUDA major it was built for
  // (libcudart.so.13); ORT's table gives the cuDNN major of that flavour.
  compat.ep_cuda_major = CudaMajorOf(ep.needed);
  const gpu::EpBuildResult builds = gpu::EpBuildFor(ort_version);
  for (const auto& b : builds.builds) {
    if (compat.ep_cuda_major == 0) compat.ep_cuda_major = b.cuda_major;
    if (b.cuda_major == compat.ep_cuda_major) {
      compat.ep_cudnn_major = b.cudnn_major;
      break;
    }
  }
  CheckCompatibility(compat, report);

  // Environment traps (host.* and libraries.*), on the facts of layers 1-4.
  EnvironmentCheckInputs env{*seams.env, *seams.fs};
  env.in_container = host.in_container();
  env.driver_loaded = driver.info.cuda_load_status.ok();
  env.device_ccs = driver.device_ccs;
  env.ep_cubin_archs = ep.cubin;
  env.ep_ptx_archs = ep.ptx;
  env.cudart_version = lib_facts.cudart_version;
  env.ep_cuda_major = compat.ep_cuda_major;
  env.libraries = libs.libraries;
  CheckEnvironment(env, report);
  CheckTf32(Tf32Inputs{*seams.env, driver.device_ccs, options.observe.cuda_options}, report);

  if (!options.run_onnxruntime) {
    health.load_skip_reason = "the end-to-end run was not requested";
    CheckHealth(health, report);
    return report;
  }

  // 5-6. Execution provider and end to end on the built-in model.
  ObserveOptions observe = options.observe;
  if (!observe.gpu_memory && driver.gpu_usable && seams.nvml != nullptr) {
    gpu::Nvml* nvml = seams.nvml;
    const unsigned device = static_cast<unsigned>(observe.device_id);
    observe.gpu_memory = [nvml, device]() -> std::optional<uint64_t> {
      auto used = nvml->ProcessMemoryUsed(device, static_cast<uint32_t>(::getpid()));
      if (!used.ok()) return std::nullopt;
      return *used;
    };
  }
  std::vector<gpu::NvmlClockSample> load_samples;
  if (health.skip_reason.empty() && !observe.sample_under_load) {
    gpu::Nvml* nvml = seams.nvml;
    const unsigned index = static_cast<unsigned>(health.nvml_index);
    observe.sample_under_load = [nvml, index, &load_samples] {
      if (auto s = nvml->SampleClocks(index); s.ok()) load_samples.push_back(std::move(s).value());
    };
  }
  std::string ground;
  if (!driver.gpu_usable) {
    ground = "no usable GPU (driver layer)";
  } else if (!lib_facts.first_missing.empty()) {
    ground = lib_facts.first_missing + " is missing (libraries layer)";
  }
  RuntimeObservation rt = ObserveRuntime(ground.empty(), observe);
  rt.provider.skip_reason = ground;
  if (!ground.empty()) rt.end_to_end.skip_reason = ground;
  const bool cuda_ok = EvaluateProvider(rt.provider, report);
  TensorRtObservation trt = ObserveTensorRtLibraries(*seams.fs, *seams.search, ep_path);
  bool trt_libraries = trt.ep_present && trt.ep_error.empty();
  for (const auto& l : trt.libraries) trt_libraries = trt_libraries && !l.path.empty();
  if (!cuda_ok) {
    trt.session_skip_reason = "the CUDA execution provider does not work (provider.cuda_session)";
  } else if (!trt_libraries) {
    trt.session_skip_reason = "the TensorRT EP or its libraries are missing (provider.tensorrt)";
  } else {
    const TensorRtRun run = ObserveTensorRtSession(observe);
    trt.session_attempted = true;
    trt.session_error = run.error;
    trt.session_ms = run.session_ms;
    trt.run_ms = run.run_ms;
  }
  EvaluateTensorRt(trt, report);
  EvaluateEndToEnd(rt.end_to_end, report);
  health.load_samples = std::move(load_samples);
  if (health.load_samples.empty()) {
    health.load_skip_reason = !rt.end_to_end.skip_reason.empty() ? rt.end_to_end.skip_reason
                                                                 : "no sample was taken during the CUDA runs";
  }
  CheckHealth(health, report);

  // 7. The user's models.
  int index = 1;
  std::set<std::string> inputs_seen;
  bool all_loaded = true;
  for (const auto& path : options.models) {
    ModelObservation m = ObserveModel(path, cuda_ok, observe);
    if (!cuda_ok) m.run.skip_reason = ground.empty() ? "the CUDA execution provider does not work (provider layer)" : ground;
    inputs_seen.insert(m.input_names.begin(), m.input_names.end());
    all_loaded = all_loaded && m.load_error.empty() && m.input_error.empty();
    EvaluateModel(m, index, report);
    if (m.load_error.empty()) {
      auto census = ReadPrecisionCensus(*seams.fs, path);
      ModelPrecisionInputs precision;
      precision.path = path;
      precision.census = census.ok() ? &*census : nullptr;
      precision.census_error = census.ok() ? "" : census.status().message();
      precision.placement = m.run.placement ? &*m.run.placement : nullptr;
      precision.device_cc = CudaDeviceCc(driver.info, options.observe.device_id);
      CheckModelPrecision(precision, index, report);
    }
    ++index;
  }
  // Contexts this process made on GPUs it was not asked to use, now that
  // every CUDA run (the check model's and the --model runs) is over.
  // Without NVML or its GPU, health.gpu is the layer's only finding.
  if (health.skip_reason.empty()) {
    ContextObservation contexts;
    if (!cuda_ok) {
      contexts.skip_reason = "no CUDA run in this process (provider layer)";
    } else if (health.mig_enabled) {
      contexts.skip_reason = "MIG is on: NVML's process lists do not say which instance a context is on";
    } else {
      contexts = ObserveContexts(*seams.nvml, driver.info, health.cuda_index, health.nvml_index, health.own_pid,
                                 health.in_container);
    }
    CheckContexts(contexts, report);
  }

  // A --shape that names no input of any model is a typo the user must see.
  if (all_loaded) {
    for (const auto& [name, dims] : observe.shapes) {
      if (inputs_seen.count(name)) continue;
      Finding f;
      f.id = "model.shape";
      f.layer = Layer::kModel;
      f.verdict = Verdict::kFail;
      f.title = "--shape names '" + name + "', an input or symbolic dimension no model has";
      std::string names;
      for (const auto& n : inputs_seen) names += (names.empty() ? "" : ", ") + n;
      f.seen = "inputs and symbolic dimensions of the models given: " + names;
      f.why = "the shape meant for that input was not used";
      f.fix = "write --shape INPUT:DIMS (a full shape) or --shape DIM:SIZE with one of the names above";
      report.Add(std::move(f));
    }
  }
  return report;
}

}  // namespace ortgpu::doctor
