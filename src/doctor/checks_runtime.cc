#include "doctor/checks_runtime.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace ortgpu::doctor {
namespace {

constexpr const char* kCuda = "CUDAExecutionProvider";

Finding Make(std::string id, Layer layer, Verdict v, std::string title, bool gpu = false) {
  return MakeFinding(std::move(id), layer, v, std::move(title), gpu);
}

std::string Ms(double ms) { return fmt::format("{:.3f} ms", ms); }

// Findings shared by the built-in check (layer 6) and each --model (layer 7).
void EvaluateRun(const EndToEndObservation& obs, const std::string& prefix, Layer layer, Report& report) {
  if (!obs.cpu.ok) {
    auto f = Make(prefix + ".cpu", layer, Verdict::kFail, "the CPU run failed");
    f.seen = obs.cpu.error;
    f.why = "without a working CPU run there is no reference to check the GPU against";
    f.fix = "check the model and its inputs: their sizes (--shape NAME:DIMS) and values (--int-range NAME:LO:HI, "
            "--input NAME=FILE)";
    report.Add(std::move(f));
  } else {
    auto f = Make(prefix + ".cpu", layer, Verdict::kPass, "runs on the CPU: " + Ms(obs.cpu.median_ms) + " median");
    f.seen = fmt::format("{} on CPUExecutionProvider; first run {}, median of {} runs {}", obs.model_label,
                         Ms(obs.cpu.first_run_ms), obs.cpu.runs, Ms(obs.cpu.median_ms));
    f.facts = {{"median_ms", fmt::format("{:.4f}", obs.cpu.median_ms)},
               {"first_run_ms", fmt::format("{:.4f}", obs.cpu.first_run_ms)}};
    report.Add(std::move(f));
  }

  if (!obs.cuda) {
    auto f = Make(prefix + ".cuda", layer, Verdict::kSkip, "GPU run skipped", true);
    f.seen = obs.skip_reason;
    f.why = "an earlier layer showed the CUDA execution provider cannot run here";
    report.Add(std::move(f));
    return;
  }
  if (!obs.cuda->ok) {
    auto f = Make(prefix + ".cuda", layer, Verdict::kFail, "the CUDA run failed", true);
    f.seen = obs.cuda->error;
    f.why = "the model cannot run on the GPU as deployed";
    f.fix = "see the provider and libraries findings above; for out-of-memory lower the batch or set gpu_mem_limit";
    report.Add(std::move(f));
    return;
  }
  {
    auto f = Make(prefix + ".cuda", layer, Verdict::kPass, "runs on CUDA: " + Ms(obs.cuda->median_ms) + " median",
                  true);
    f.seen = fmt::format("{} on CUDAExecutionProvider; first run {} (includes cuDNN/cuBLAS set-up), median of {} runs {}",
                         obs.model_label, Ms(obs.cuda->first_run_ms), obs.cuda->runs, Ms(obs.cuda->median_ms));
    f.facts = {{"median_ms", fmt::format("{:.4f}", obs.cuda->median_ms)},
               {"first_run_ms", fmt::format("{:.4f}", obs.cuda->first_run_ms)}};
    if (obs.gpu_memory_bytes) {
      f.seen += fmt::format("; GPU memory used by this process: {:.1f} MiB", *obs.gpu_memory_bytes / 1048576.0);
      f.facts["gpu_memory_bytes"] = std::to_string(*obs.gpu_memory_bytes);
    }
    report.Add(std::move(f));
  }
  if (obs.cpu.ok) {
    // One judge: CompareOutputs (ort/accuracy.h), which admits atol + rtol x
    // range and matches detections as sets of rows, leaves a note exactly when
    // the outputs differ. Comparing max_rel_diff with rtol again here failed
    // ssdlite's tied detections matched right at the tolerance (issue 25).
    const bool agree = obs.agreement_note.empty();
    auto f = Make(prefix + ".agreement", layer, agree ? Verdict::kPass : Verdict::kFail,
                  agree ? "CUDA and CPU outputs agree" : "CUDA and CPU outputs differ", true);
    f.seen = fmt::format("max |cuda - cpu| = {:.3g}, {:.3g} of the output's range (tolerance {:.3g})",
                         obs.max_abs_diff, obs.max_rel_diff, obs.tolerance);
    if (!obs.agreement_note.empty()) f.seen += "; " + obs.agreement_note;
    for (const auto& rows : obs.row_set_notes) {
      if (rows != obs.agreement_note) f.seen += "; " + rows;
    }
    f.facts = {{"max_abs_diff", fmt::format("{:.6g}", obs.max_abs_diff)},
               {"max_rel_diff", fmt::format("{:.6g}", obs.max_rel_diff)}};
    if (!agree) {
      f.why = "the GPU computes different numbers than the CPU: a kernel bug, an fp16/TF32 setting or a bad model";
      f.fix = "compare with `ortgpu bench MODEL --provider cuda --cuda-option use_tf32=0`; report the model and the "
              "ORT version if the difference stays";
    }
    report.Add(std::move(f));

    const double speedup = obs.cuda->median_ms > 0 ? obs.cpu.median_ms / obs.cuda->median_ms : 0;
    const bool faster = speedup >= 1.2;
    auto s = Make(prefix + ".speedup", layer, faster ? Verdict::kPass : Verdict::kWarn,
                  faster ? fmt::format("GPU is {:.1f}x faster than the CPU", speedup)
                         : fmt::format("GPU available but not faster than the CPU ({:.2f}x)", speedup),
                  true);
    s.seen = fmt::format("median CPU {} vs CUDA {}", Ms(obs.cpu.median_ms), Ms(obs.cuda->median_ms));
    s.facts = {{"speedup", fmt::format("{:.3f}", speedup)}};
    if (!faster) {
      std::string causes = "likely causes: ";
      if (obs.placement && !obs.placement->compute_fallbacks.empty()) {
        causes += fmt::format("{} compute nodes run on the CPU; ", obs.placement->compute_fallbacks.size());
      }
      if (obs.placement && obs.placement->memcpy_nodes > 0) {
        causes += fmt::format("{} Memcpy nodes copy between host and device; ", obs.placement->memcpy_nodes);
      }
      causes += "a batch too small to fill the GPU; host-to-device copies of the inputs on every run; "
                "a GPU shared with other work";
      s.why = causes;
      s.fix = "measure with `ortgpu bench MODEL --sweep` (I/O binding, larger batches, CUDA graphs)";
    }
    report.Add(std::move(s));
  }
  if (obs.placement) {
    const auto& p = *obs.placement;
    std::string shares;
    for (const auto& sh : p.providers) {
      shares += fmt::format("{}{}: {} nodes, {:.1f}% of kernel time", shares.empty() ? "" : "; ", sh.provider,
                            sh.nodes, 100.0 * sh.time_share);
    }
    const bool fallback = !p.compute_fallbacks.empty();
    auto f = Make(prefix + ".placement", layer, fallback ? Verdict::kFail : Verdict::kPass,
                  fallback ? fmt::format("{} compute nodes fell back to the CPU", p.compute_fallbacks.size())
                  : p.shape_nodes.empty()
                      ? fmt::format("every node runs on CUDA ({} nodes)", p.total_nodes)
                      : fmt::format("every compute node runs on CUDA ({} of {} nodes; {} shape nodes on the CPU)",
                                    p.total_nodes - static_cast<int>(p.shape_nodes.size()), p.total_nodes,
                                    p.shape_nodes.size()),
                  true);
    f.seen = shares + fmt::format("; {} Memcpy nodes", p.memcpy_nodes);
    if (!p.shape_nodes.empty()) {
      std::map<std::string, int> ops;
      for (const auto& n : p.shape_nodes) ++ops[n.op_type];
      std::string list;
      for (const auto& [op, n] : ops) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", n, op);
      f.seen += fmt::format("; on the CPU as shape computation (benign): {} nodes ({})", p.shape_nodes.size(), list);
    }
    if (fallback) {
      std::string list;
      for (size_t i = 0; i < p.compute_fallbacks.size() && i < 8; ++i) {
        const auto& n = p.compute_fallbacks[i];
        list += fmt::format("{}{} '{}' [{}]{}: {}", list.empty() ? "" : "; ", n.op_type, n.node_name, n.types,
                            n.derivation.empty() ? "" : " " + n.derivation, n.reason);
      }
      if (p.compute_fallbacks.size() > 8) list += fmt::format("; and {} more", p.compute_fallbacks.size() - 8);
      f.seen += "; compute on the CPU: " + list;
      f.why = "each fallback copies tensors between GPU and host and runs heavy math on the CPU";
      std::set<std::string> ops;
      for (const auto& n : p.compute_fallbacks) ops.insert(n.op_type);
      std::string op_list;
      for (const auto& op : ops) op_list += (op_list.empty() ? "" : ", ") + op;
      f.fix = "check " + op_list + " against the ORT CUDA EP's operator kernels: export the model without them, "
              "or with the types the CUDA EP takes (float32 or float16 rather than float64 or integers)";
    }
    f.seen += p.by_derivation     ? "; CPU nodes told apart by what they read in the graph ORT ran"
              : p.graph_note.empty() ? "; CPU nodes told apart by element types only"
                                     : "; CPU nodes told apart by element types only (" + p.graph_note + ")";
    f.facts = {{"total_nodes", std::to_string(p.total_nodes)},
               {"placement_rule", p.by_derivation ? "derivation" : "element_types"},
               {"memcpy_nodes", std::to_string(p.memcpy_nodes)},
               {"shape_nodes_on_cpu", std::to_string(p.shape_nodes.size())},
               {"compute_nodes_on_cpu", std::to_string(p.compute_fallbacks.size())}};
    for (const auto& sh : p.providers) {
      f.facts["nodes." + sh.provider] = std::to_string(sh.nodes);
      f.facts["time_share." + sh.provider] = fmt::format("{:.4f}", sh.time_share);
    }
    report.Add(std::move(f));
  }
}

}  // namespace

bool EvaluateProvider(const ProviderObservation& obs, Report& report) {
  const bool has_cuda = std::find(obs.available_providers.begin(), obs.available_providers.end(), kCuda) !=
                        obs.available_providers.end();
  {
    std::string providers;
    for (const auto& p : obs.available_providers) providers += (providers.empty() ? "" : ", ") + p;
    auto f = Make("provider.ort", Layer::kProvider, has_cuda ? Verdict::kPass : Verdict::kFail,
                  "ONNX Runtime " + obs.ort_version + (has_cuda ? " with the CUDA execution provider" : " without CUDA"),
                  !has_cuda);
    std::string devices;
    for (const auto& d : obs.ep_devices) devices += (devices.empty() ? "" : "; ") + d;
    f.seen = "library " + obs.ort_library + "; providers: " + providers +
             "; EP devices: " + (devices.empty() ? "none listed" : devices);
    f.facts = {{"version", obs.ort_version}, {"library", obs.ort_library}, {"providers", providers},
               {"ep_devices", devices}};
    if (!has_cuda) {
      f.why = "this ONNX Runtime build cannot use a GPU at all";
      f.fix = "build ortgpu against a GPU release: ORT_ROOT=/path/to/onnxruntime-linux-x64-gpu make run";
    }
    report.Add(std::move(f));
  }
  {
    const bool present = !obs.ep_library.empty();
    auto f = Make("provider.ep_library", Layer::kProvider, present ? Verdict::kPass : Verdict::kFail,
                  present ? "CUDA EP library present" : "CUDA EP library missing", true);
    f.seen = present ? obs.ep_library : "no libonnxruntime_providers_cuda.so next to " + obs.ort_library;
    if (!present) {
      f.why = "ORT loads the CUDA EP from the folder of libonnxruntime.so.1";
      f.fix = "copy libonnxruntime_providers_cuda.so and libonnxruntime_providers_shared.so next to it "
              "(make build does this)";
    }
    report.Add(std::move(f));
  }
  if (!obs.attempted) {
    auto f = Make("provider.cuda_session", Layer::kProvider, Verdict::kSkip, "CUDA session not attempted", true);
    f.seen = obs.skip_reason.empty() ? "no usable GPU was found in the driver layer" : obs.skip_reason;
    f.why = "a layer below failed, so the CUDA EP cannot start";
    report.Add(std::move(f));
    return false;
  }
  bool ok = obs.session_error.empty();
  if (ok) {
    auto f = Make("provider.cuda_session", Layer::kProvider, Verdict::kPass,
                  fmt::format("CUDA EP initialised; session created in {:.0f} ms", obs.session_ms), true);
    f.seen = "SessionOptionsAppendExecutionProvider_CUDA_V2 on the built-in model with "
             "session.disable_cpu_ep_fallback=1";
    report.Add(std::move(f));
  } else {
    std::string title = "CUDA EP failed to initialise";
    if (!obs.log.missing_library.empty()) title += ": " + obs.log.missing_library + " not found";
    auto f = Make("provider.cuda_session", Layer::kProvider, Verdict::kFail, title, true);
    f.seen = obs.session_error;
    f.why = "without it ORT runs every node on the CPU (Python's InferenceSession does so silently)";
    f.fix = obs.log.missing_library.empty()
                ? "see the libraries and compatibility findings above for the component at fault"
                : "make " + obs.log.missing_library +
                      " loadable: see the libraries finding for it, which names the copies found and the export or "
                      "package that fixes it";
    report.Add(std::move(f));
  }
  if (obs.log.memcpy_nodes_added >= 0) {
    auto f = Make("provider.memcpy", Layer::kProvider, Verdict::kInfo,
                  fmt::format("ORT added {} Memcpy nodes to the built-in model", obs.log.memcpy_nodes_added));
    f.seen = "ORT log: " + std::to_string(obs.log.memcpy_nodes_added) + " Memcpy nodes are added to the graph";
    report.Add(std::move(f));
  }
  if (!obs.log.cudnn_version_line.empty()) {
    auto f = Make("provider.cudnn_log", Layer::kProvider, Verdict::kInfo, "ORT's cuDNN line");
    f.seen = obs.log.cudnn_version_line;
    report.Add(std::move(f));
  }
  return ok;
}

void EvaluateEndToEnd(const EndToEndObservation& obs, Report& report) {
  EvaluateRun(obs, "e2e", Layer::kEndToEnd, report);
}

void EvaluateModel(const ModelObservation& obs, int index, Report& report) {
  const std::string prefix = "model." + std::to_string(index);
  if (!obs.load_error.empty()) {
    auto f = Make(prefix + ".load", Layer::kModel, Verdict::kFail, "cannot load " + obs.path);
    f.seen = obs.load_error;
    f.why = "the model cannot be served or measured until it loads";
    f.fix = "check the path and re-export the model (onnx.checker.check_model)";
    report.Add(std::move(f));
    return;
  }
  if (!obs.input_error.empty()) {
    auto f = Make(prefix + ".inputs", Layer::kModel, Verdict::kFail, "the input flags do not fit " + obs.path);
    f.seen = obs.input_error;
    f.why = "doctor runs the model on the inputs its flags describe, so it cannot check it with these";
    f.fix = "fix the flag named above: --shape NAME:DIMS takes an input's full shape or a symbolic dimension's "
            "size (batch:8); --input NAME=FILE and --int-range NAME:LO:HI take an input's name";
    report.Add(std::move(f));
    return;
  }
  {
    auto f = Make(prefix + ".inputs", Layer::kModel, Verdict::kInfo, obs.path);
    std::string s;
    for (const auto& i : obs.input_shapes) s += (s.empty() ? "" : "; ") + i;
    f.seen = "inputs: " + s;
    if (!obs.defaulted_dims.empty()) {
      std::string d;
      for (const auto& x : obs.defaulted_dims) d += (d.empty() ? "" : ", ") + x;
      f.seen += "; symbolic dims set to the default 1: " + d + " (give sizes with --shape NAME:DIMS)";
    }
    report.Add(std::move(f));
  }
  EvaluateRun(obs.run, prefix, Layer::kModel, report);
}

}  // namespace ortgpu::doctor
