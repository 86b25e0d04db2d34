#include "doctor/checks_compat.h"

#include "gpu/compatibility.h"
#include "gpu/cuda_driver.h"

namespace ortgpu::doctor {
namespace {

Finding Make(std::string id, Verdict v, std::string title) {
  return MakeFinding(std::move(id), Layer::kCompatibility, v, std::move(title), /*gpu=*/true);
}

Verdict FromCompat(gpu::CompatVerdict v) {
  switch (v) {
    case gpu::CompatVerdict::kOk: return Verdict::kPass;
    case gpu::CompatVerdict::kDegraded: return Verdict::kWarn;
    case gpu::CompatVerdict::kIncompatible: return Verdict::kFail;
    case gpu::CompatVerdict::kUnknown: return Verdict::kInfo;
  }
  return Verdict::kInfo;
}

// The pip wheels that provide each CUDA major's runtime and cuDNN 9.
std::string CudaRuntimeFix(int cuda_major) {
  if (cuda_major >= 13) {
    return "pip install 'nvidia-cuda-runtime==13.*' (puts libcudart.so.13 in "
           "site-packages/nvidia/cu13/lib), or install the CUDA 13 toolkit and export "
           "LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH";
  }
  return "pip install nvidia-cuda-runtime-cu" + std::to_string(cuda_major) +
         " nvidia-cublas-cu" + std::to_string(cuda_major) + ", or install the CUDA " +
         std::to_string(cuda_major) + " toolkit and add its lib64 folder to LD_LIBRARY_PATH";
}

std::string CudnnFix(int cudnn_major, int cuda_major) {
  return "pip install 'nvidia-cudnn-cu" + std::to_string(cuda_major) + "==" +
         std::to_string(cudnn_major) + ".*' and put its lib folder "
         "(site-packages/nvidia/cudnn/lib) first on LD_LIBRARY_PATH";
}

struct EpTarget {
  int cuda_major = 0;
  int cudnn_major = 0;
  std::string from;  // how we know
};

EpTarget ResolveEpTarget(const CompatInputs& in, Report& report) {
  EpTarget t{in.ep_cuda_major, in.ep_cudnn_major, "the EP's ELF NEEDED list"};
  const gpu::EpBuildResult table = gpu::EpBuildFor(in.ort_version);
  if (t.cuda_major == 0 || t.cudnn_major == 0) {
    // Without the EP's own dependencies, prefer the table's build matching
    // the runtime that is present; else its default.
    const gpu::EpBuild* pick = table.builds.empty() ? nullptr : &table.builds.front();
    for (const auto& b : table.builds) {
      if (in.cuda_runtime_version && b.cuda_major == *in.cuda_runtime_version / 1000) {
        pick = &b;
        break;
      }
    }
    if (pick != nullptr) {
      if (t.cuda_major == 0) t.cuda_major = pick->cuda_major;
      if (t.cudnn_major == 0) t.cudnn_major = pick->cudnn_major;
      t.from = "ONNX Runtime's requirements table (" + pick->package + ")";
    }
  }
  Finding f = Make("compat.ep_build", Verdict::kInfo,
                   t.cuda_major > 0 ? "CUDA EP built for CUDA " + std::to_string(t.cuda_major) +
                                          " and cuDNN " + std::to_string(t.cudnn_major)
                                    : "CUDA EP build unknown");
  f.gpu = false;
  f.seen = "ONNX Runtime " + in.ort_version + "; from " + t.from + ". " + table.message;
  // Each row of the table cites its own source: the one of the build this
  // EP is, and every row's in the JSON facts.
  for (const auto& b : table.builds) {
    const std::string key = "source.cuda" + std::to_string(b.cuda_major);
    f.facts[key] = b.source;
    if (b.cuda_major == t.cuda_major && f.facts.count("source") == 0) {
      f.facts["source"] = b.source;
      f.seen += " Source of the CUDA " + std::to_string(b.cuda_major) + " row: " + b.source + ".";
    }
  }
  f.facts["ep_cuda_major"] = std::to_string(t.cuda_major);
  f.facts["ep_cudnn_major"] = std::to_string(t.cudnn_major);
  report.Add(std::move(f));
  return t;
}

void CheckRuntime(const CompatInputs& in, const EpTarget& ep, Report& report) {
  if (ep.cuda_major == 0) return;
  const std::string want = "CUDA " + std::to_string(ep.cuda_major);
  if (!in.cuda_runtime_version) {
    Finding f = Make("compat.cuda_runtime", Verdict::kSkip, "no CUDA runtime found to compare");
    f.seen = "no libcudart was found or loaded (see the libraries layer)";
    f.why = "the EP needs the " + want + " runtime (libcudart.so." +
            std::to_string(ep.cuda_major) + ")";
    f.fix = CudaRuntimeFix(ep.cuda_major);
    report.Add(std::move(f));
    return;
  }
  const int rt = *in.cuda_runtime_version;
  const int major = rt / 1000;
  Finding f = Make("compat.cuda_runtime", Verdict::kPass,
                   "CUDA runtime " + gpu::FormatCudaVersion(rt) + " matches the EP's " + want);
  f.seen = "runtime " + gpu::FormatCudaVersion(rt) + ", EP built for " + want + " (" + ep.from +
           ")";
  f.facts["cuda_runtime_version"] = std::to_string(rt);
  if (major != ep.cuda_major) {
    f.verdict = Verdict::kFail;
    f.title = "CUDA " + std::to_string(major) + " runtime beside a " + want + " EP";
    f.why = "CUDA libraries are only compatible within one major version: the EP needs "
            "libcudart.so." + std::to_string(ep.cuda_major) + " and will fail to load";
    f.fix = CudaRuntimeFix(ep.cuda_major);
  }
  report.Add(std::move(f));
}

void CheckCudnn(const CompatInputs& in, const EpTarget& ep, Report& report) {
  if (in.cudnn_version && ep.cudnn_major > 0) {
    const int major = *in.cudnn_version >= 10000 ? *in.cudnn_version / 10000
                                                 : *in.cudnn_version / 1000;
    Finding f = Make("compat.cudnn", Verdict::kPass,
                     "cuDNN " + FormatCudnnVersion(*in.cudnn_version) + " matches the EP's cuDNN " +
                         std::to_string(ep.cudnn_major));
    f.seen = "cuDNN " + FormatCudnnVersion(*in.cudnn_version) + ", EP built for cuDNN " +
             std::to_string(ep.cudnn_major);
    f.facts["cudnn_version"] = std::to_string(*in.cudnn_version);
    if (major != ep.cudnn_major) {
      f.verdict = Verdict::kFail;
      f.title = "cuDNN " + std::to_string(major) + " beside a cuDNN " +
                std::to_string(ep.cudnn_major) + " EP";
      f.why = "ONNX Runtime built with cuDNN " + std::to_string(ep.cudnn_major) +
              " is not compatible with other cuDNN majors";
      f.fix = CudnnFix(ep.cudnn_major, ep.cuda_major);
    }
    report.Add(std::move(f));
  }
  if (in.cudnn_cuda_major && in.cuda_runtime_version) {
    const gpu::CompatResult r =
        gpu::CheckCudnnForCuda(*in.cudnn_cuda_major * 1000, *in.cuda_runtime_version);
    Finding f = Make("compat.cudnn_cuda", FromCompat(r.verdict),
                     r.ok() ? "cuDNN was built for the loaded CUDA major"
                            : "cuDNN was built for CUDA " + std::to_string(*in.cudnn_cuda_major) +
                                  ", the runtime is CUDA " +
                                  std::to_string(*in.cuda_runtime_version / 1000));
    f.seen = r.message;
    f.facts["cudnn_cuda_major"] = std::to_string(*in.cudnn_cuda_major);
    if (!r.ok()) {
      f.why = "cuDNN 9 ships one build per CUDA major; the two must match";
      f.fix = CudnnFix(in.cudnn_version ? *in.cudnn_version / 10000 : 9,
                       *in.cuda_runtime_version / 1000);
    }
    report.Add(std::move(f));
  }
}

void CheckDriverVsRuntime(const CompatInputs& in, Report& report) {
  if (!in.driver_version || !in.cuda_runtime_version) return;
  const int rt = *in.cuda_runtime_version;
  const gpu::CompatResult r = gpu::CheckDriverForCuda(*in.driver_version, rt / 1000, (rt % 1000) / 10);
  Finding f = Make("compat.driver_cuda", FromCompat(r.verdict),
                   "driver " + *in.driver_version + " for CUDA " + gpu::FormatCudaVersion(rt));
  f.seen = r.message;
  f.facts["required_driver"] = r.required;
  f.facts["source"] = r.source;
  if (!r.source.empty()) f.seen += " (source: " + r.source + ")";
  if (r.verdict == gpu::CompatVerdict::kIncompatible) {
    f.why = "a CUDA runtime newer than the driver fails with cudaErrorInsufficientDriver";
    f.fix = "install NVIDIA driver " + r.required + " (sudo apt-get install nvidia-driver-580), "
            "or use an EP and runtime for the CUDA version the driver supports";
  } else if (r.verdict == gpu::CompatVerdict::kDegraded) {
    f.why = "minor version compatibility covers most code, not newer driver features or PTX JIT";
    f.fix = "upgrade the driver to " + r.required + " when convenient";
  }
  report.Add(std::move(f));
}

void CheckArchs(const CompatInputs& in, int ep_cuda_major, Report& report) {
  std::set<int> seen_ccs;
  for (int cc : in.device_ccs) {
    if (!seen_ccs.insert(cc).second) continue;
    const std::string sm = "sm_" + std::to_string(cc);
    const std::string arch = gpu::ArchName(cc) + " " + sm;
    // Architecture vs the EP's CUDA major and vs the driver.
    Verdict v = Verdict::kPass;
    std::string seen, why, fix;
    if (ep_cuda_major > 0) {
      const gpu::CompatResult r = gpu::CheckCudaSupportsArch(ep_cuda_major, cc);
      seen = r.message;
      if (r.verdict == gpu::CompatVerdict::kIncompatible) {
        v = Verdict::kFail;
        why = r.message;
        fix = "use a CUDA " + std::to_string(ep_cuda_major - 1) + " build of the EP "
              "(onnxruntime-gpu for CUDA 12), or a GPU of compute capability >= 7.5";
      }
    }
    if (in.driver_version) {
      const gpu::CompatResult r = gpu::CheckDriverForArch(*in.driver_version, cc);
      seen += (seen.empty() ? "" : "; ") + r.message;
      if (r.verdict == gpu::CompatVerdict::kIncompatible) {
        v = Verdict::kFail;
        why += (why.empty() ? "" : "; ") + std::string("the driver predates this architecture");
        fix += std::string(fix.empty() ? "" : "; ") + "install NVIDIA driver " + r.required;
      }
    }
    if (!seen.empty()) {
      Finding f = Make("compat.arch." + sm, v, arch + " supported by CUDA and the driver");
      if (v == Verdict::kFail) f.title = arch + " not supported by this CUDA/driver";
      f.seen = seen;
      f.why = why;
      f.fix = fix;
      f.facts["compute_capability"] = gpu::FormatComputeCapability(cc);
      report.Add(std::move(f));
    }

    Finding k = Make("compat.kernels." + sm, Verdict::kSkip, "EP kernels for " + arch);
    if (in.ep_cubin_archs.empty() && in.ep_ptx_archs.empty()) {
      k.seen = "the EP's fatbin architectures were not inspected";
      k.why = "cannot tell whether the EP has machine code for " + sm;
      report.Add(std::move(k));
      continue;
    }
    const gpu::CompatResult r = gpu::CheckKernelsForArch(in.ep_cubin_archs, in.ep_ptx_archs, cc);
    k.verdict = FromCompat(r.verdict);
    k.seen = r.message;
    k.facts["device_sm"] = std::to_string(cc);
    if (r.verdict == gpu::CompatVerdict::kIncompatible) {
      k.title = "EP has no kernels for " + arch + ": kernels will be missing";
      k.why = "CUDA machine code runs only on its own major architecture, and there is no PTX "
              "to JIT: every EP kernel launch fails with 'no kernel image is available'";
      k.fix = "use an ONNX Runtime CUDA EP built for " + sm + " (build from source with "
              "--cmake_extra_defines CMAKE_CUDA_ARCHITECTURES=" + std::to_string(cc) +
              "), or run on a GPU whose architecture the EP lists";
    } else if (r.verdict == gpu::CompatVerdict::kDegraded) {
      k.title = "EP kernels for " + arch + " come from PTX (JIT at first use)";
      k.why = "the first session start compiles every kernel, which can take minutes";
      k.fix = "export CUDA_CACHE_MAXSIZE=4294967296 so the JIT result is cached between runs";
    }
    report.Add(std::move(k));
  }
}

}  // namespace

std::string FormatCudnnVersion(int version) {
  // cuDNN 9: major*10000 + minor*100 + patch; cuDNN <= 8: major*1000 + minor*100 + patch.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  const int rest = version >= 10000 ? version % 10000 : version % 1000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." + std::to_string(rest % 100);
}

void CheckCompatibility(const CompatInputs& in, Report& report) {
  const EpTarget ep = ResolveEpTarget(in, report);
  CheckRuntime(in, ep, report);
  CheckCudnn(in, ep, report);
  CheckDriverVsRuntime(in, report);
  CheckArchs(in, ep.cuda_major, report);
}

}  // namespace ortgpu::doctor
