#include "doctor/checks_tensorrt.h"

#include <fmt/format.h>

namespace ortgpu::doctor {
namespace {

// "libnvinfer.so.10" -> 10; 0 when there is no number after ".so.".
int SonameMajor(const std::string& soname) {
  const size_t at = soname.find(".so.");
  return at == std::string::npos ? 0 : std::atoi(soname.c_str() + at + 4);
}

}  // namespace

std::vector<std::string> TensorRtSonames(const std::vector<std::string>& needed) {
  std::vector<std::string> out;
  for (const auto& n : needed) {
    if (n.rfind("libnvinfer", 0) == 0 || n.rfind("libnvonnxparser", 0) == 0) out.push_back(n);
  }
  return out;
}

void EvaluateTensorRt(const TensorRtObservation& obs, Report& report) {
  Finding lib = MakeFinding("provider.tensorrt", Layer::kProvider, Verdict::kSkip, "", /*gpu=*/false);
  if (!obs.ep_present) {
    lib.title = "TensorRT EP not installed (TensorRT not checked)";
    lib.seen = "no " + obs.ep_library;
    lib.why = "ortgpu runs on the CUDA EP; the TensorRT EP is optional";
    lib.fix = "to use TensorRT, install an ONNX Runtime build with libonnxruntime_providers_tensorrt.so and "
              "TensorRT itself (pip install tensorrt-cu13, or the TensorRT tarball)";
    report.Add(std::move(lib));
    return;
  }
  lib.facts["ep_library"] = obs.ep_library;
  if (!obs.ep_error.empty()) {
    lib.verdict = Verdict::kWarn;
    lib.title = "cannot read the TensorRT EP library";
    lib.seen = obs.ep_error;
    lib.why = "its NEEDED list says which TensorRT it needs";
    lib.fix = "reinstall ONNX Runtime's TensorRT EP";
    report.Add(std::move(lib));
    return;
  }
  std::vector<std::string> missing;
  std::string seen;
  for (const auto& l : obs.libraries) {
    const std::string text =
        l.path.empty() ? l.soname + " not found" : l.soname + " -> " + l.path + (l.version.empty() ? "" : " (" + l.version + ")");
    seen += (seen.empty() ? "" : "; ") + text;
    if (!l.other_copies.empty()) {
      seen += " [also: ";
      for (size_t i = 0; i < l.other_copies.size(); ++i) seen += (i ? ", " : "") + l.other_copies[i];
      seen += "]";
    }
    if (l.path.empty()) missing.push_back(l.soname);
    lib.facts[l.soname] = l.path.empty() ? "" : l.version.empty() ? l.path : l.version;
  }
  lib.seen = obs.ep_library + " needs: " + (seen.empty() ? "no TensorRT library" : seen);
  if (!missing.empty()) {
    lib.verdict = Verdict::kSkip;  // TensorRT is optional: not usable here, not a fault
    lib.title = missing.front() + " not found: the TensorRT EP cannot load";
    const int major = SonameMajor(missing.front());
    lib.why = fmt::format("the EP was built for TensorRT {}; without its libraries a TensorRT session fails and "
                          "ORT falls back to CUDA or the CPU", major);
    const std::string wheel = obs.cuda_major > 0 ? "tensorrt-cu" + std::to_string(obs.cuda_major) : "tensorrt";
    lib.fix = fmt::format("pip install {}=={}.* (then its tensorrt_libs folder on LD_LIBRARY_PATH), or "
                          "install TensorRT {} and run ldconfig", wheel, major, major);
    for (const auto& l : obs.libraries) {
      if (l.path.empty() && !l.other_copies.empty()) {
        lib.fix = "a copy exists outside the loader's path: export LD_LIBRARY_PATH=" +
                  l.other_copies.front().substr(0, l.other_copies.front().rfind('/')) + ":$LD_LIBRARY_PATH";
        break;
      }
    }
  } else {
    const TensorRtLibrary* nvinfer = nullptr;
    for (const auto& l : obs.libraries) {
      if (l.soname.rfind("libnvinfer.so.", 0) == 0) nvinfer = &l;
    }
    lib.verdict = Verdict::kPass;
    lib.title = nvinfer ? "TensorRT " + (nvinfer->version.empty() ? nvinfer->soname : nvinfer->version) +
                              " found for the TensorRT EP"
                        : "the TensorRT EP's libraries are found";
    if (nvinfer && !nvinfer->version.empty() && std::atoi(nvinfer->version.c_str()) != SonameMajor(nvinfer->soname)) {
      lib.verdict = Verdict::kWarn;
      lib.title = "TensorRT " + nvinfer->version + " behind " + nvinfer->soname;
      lib.why = "the file's version is not of the major the EP was built for";
      lib.fix = "install TensorRT " + std::to_string(SonameMajor(nvinfer->soname));
    }
  }
  report.Add(std::move(lib));

  Finding s = MakeFinding("provider.tensorrt_session", Layer::kProvider, Verdict::kSkip, "", /*gpu=*/false);
  if (!obs.session_attempted) {
    s.title = "TensorRT session not attempted";
    s.seen = obs.session_skip_reason;
    s.why = "a TensorRT session needs the EP's libraries and a working CUDA EP";
  } else if (!obs.session_error.empty()) {
    s.verdict = Verdict::kWarn;
    s.title = "the TensorRT session on the check model failed";
    s.seen = obs.session_error;
    s.why = "models run with --provider tensorrt will fail the same way";
    s.fix = "see the message: a TensorRT and CUDA version mismatch names the library; "
            "ORT_TENSORRT_* variables or --provider cuda as the alternative";
  } else {
    s.verdict = Verdict::kPass;
    s.title = fmt::format("TensorRT runs the check model (session {:.0f} ms, engine build included)", obs.session_ms);
    s.seen = fmt::format("session created in {:.1f} ms, first run {:.3f} ms", obs.session_ms, obs.run_ms);
    s.facts["session_ms"] = fmt::format("{:.1f}", obs.session_ms);
  }
  report.Add(std::move(s));
}

}  // namespace ortgpu::doctor
