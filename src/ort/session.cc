#include "ort/session.h"

#include <chrono>
#include <cstddef>
#include <deque>
#include <regex>
#include <cstring>
#include <unordered_map>

#include <onnxruntime_cxx_api.h>

#include "ort/ort_status.h"
#include "ort/ort_values.h"
#include "ort/runtime.h"
#include "ort/shared_initializers.h"
#include "sys/file_system.h"

namespace ortgpu {
namespace {

// What Session::Run guarantees input buffers (operator new's alignment).
constexpr uintptr_t kInputAlignment = alignof(std::max_align_t);

Ort::Env& Env() { return *static_cast<Ort::Env*>(Runtime::Get().env_handle()); }

GraphOptimizationLevel ToOrt(OptimizationLevel l) {
  switch (l) {
    case OptimizationLevel::kDisable: return ORT_DISABLE_ALL;
    case OptimizationLevel::kBasic: return ORT_ENABLE_BASIC;
    case OptimizationLevel::kExtended: return ORT_ENABLE_EXTENDED;
    case OptimizationLevel::kAll: return ORT_ENABLE_ALL;
  }
  return ORT_ENABLE_ALL;
}

TensorInfo DescribeType(const std::string& name, const Ort::TypeInfo& type) {
  TensorInfo info;
  info.name = name;
  if (type.GetONNXType() != ONNX_TYPE_TENSOR) {
    info.is_tensor = false;
    info.type_text = "non-tensor";
    return info;
  }
  auto t = type.GetTensorTypeAndShapeInfo();
  info.dtype = static_cast<DataType>(t.GetElementType());
  info.shape = t.GetShape();
  std::vector<const char*> names(info.shape.size(), nullptr);
  t.GetSymbolicDimensions(names.data(), names.size());
  for (const char* n : names) info.dim_names.emplace_back(n ? n : "");
  info.type_text = OnnxTypeName(info.dtype);
  return info;
}

// Builds ORT session options; ORT exceptions propagate to the caller's catch.
Ort::SessionOptions BuildOrtOptions(const SessionOptions& o) {
  Ort::SessionOptions so;
  so.SetGraphOptimizationLevel(ToOrt(o.optimization));
  if (o.intra_op_threads > 0) so.SetIntraOpNumThreads(o.intra_op_threads);
  if (o.inter_op_threads > 0) so.SetInterOpNumThreads(o.inter_op_threads);
  so.SetExecutionMode(o.execution_mode == ExecutionMode::kParallel ? ORT_PARALLEL : ORT_SEQUENTIAL);
  if (o.disable_cpu_ep_fallback) so.AddConfigEntry("session.disable_cpu_ep_fallback", "1");
  for (const auto& [k, v] : o.config_entries) so.AddConfigEntry(k.c_str(), v.c_str());
  for (const auto& [dim, value] : o.free_dimensions) so.AddFreeDimensionOverrideByName(dim.c_str(), value);
  if (!o.profile_prefix.empty()) so.EnableProfiling(o.profile_prefix.c_str());
  if (!o.optimized_model_path.empty()) so.SetOptimizedModelFilePath(o.optimized_model_path.c_str());
  int severity = o.log_severity;
  if (o.shared_initializers != nullptr) {
    for (const auto& [name, value] : o.shared_initializers->Offered()) so.AddInitializer(name.c_str(), value);
    // ORT says which offered initializers it used at info level only
    // (ReadSharedInitializerUse); the records stay in Runtime's buffer.
    if (severity < 0 || severity > ORT_LOGGING_LEVEL_INFO) severity = ORT_LOGGING_LEVEL_INFO;
  }
  if (severity >= 0) so.SetLogSeverityLevel(severity);
  if (!o.log_id.empty()) so.SetLogId(o.log_id.c_str());
  if (o.provider == Provider::kCuda) {
    Ort::CUDAProviderOptions cuda;
    const std::map<std::string, std::string> effective = EffectiveCudaOptions(o);
    cuda.Update(std::unordered_map<std::string, std::string>(effective.begin(), effective.end()));
    so.AppendExecutionProvider_CUDA_V2(*cuda);
  } else if (o.provider == Provider::kTensorRt) {
    Ort::TensorRTProviderOptions trt;
    so.AppendExecutionProvider_TensorRT_V2(*trt);
  }
  return so;
}

// What ORT logged about the offered initializers while the session was
// created (session_state_utils.cc, SaveInitializedTensors): "Using user
// supplied initializer with name (W)." for each one it took, and a warning
// "Cannot use user supplied initializer with name: (W) because ..." for one
// planned on another device. Only records tagged with `log_id` count when it
// is set, so another model loading meanwhile does not mix in.
SharedInitializerUse ReadSharedInitializerUse(const std::vector<OrtLogRecord>& records, const std::string& log_id) {
  SharedInitializerUse use;
  auto name_after = [](const std::string& m, const std::string& lead) -> std::string {
    const size_t at = m.find(lead);
    if (at == std::string::npos) return "";
    const size_t start = at + lead.size();
    const size_t end = m.find(')', start);
    return end == std::string::npos ? "" : m.substr(start, end - start);
  };
  for (const auto& r : records) {
    if (!log_id.empty() && r.log_id != log_id) continue;
    if (r.message.find("Done saving initialized tensors") != std::string::npos) use.known = true;
    if (std::string n = name_after(r.message, "Using user supplied initializer with name ("); !n.empty()) {
      use.used.push_back(n);
    } else if (std::string c = name_after(r.message, "Cannot use user supplied initializer with name: ("); !c.empty()) {
      if (use.copied.empty()) use.copied_reason = r.message;
      use.copied.push_back(c);
    }
  }
  return use;
}

}  // namespace

// The ORT session goes first: it may use the shared initializers that
// options_ keeps alive.
Session::~Session() { session_.reset(); }

Expected<std::unique_ptr<Session>> Session::Load(const std::string& model_path, const SessionOptions& options) {
  return Create(&model_path, {}, options, model_path);
}

Expected<std::unique_ptr<Session>> Session::LoadFromBytes(std::string_view model_bytes, const SessionOptions& options,
                                                          const std::string& label) {
  return Create(nullptr, model_bytes, options, label);
}

Expected<std::unique_ptr<Session>> Session::Create(const std::string* path, std::string_view bytes,
                                                   const SessionOptions& options, const std::string& label) {
  if (options.provider == Provider::kCuda) ORTGPU_RETURN_IF_ERROR(ValidateCudaOptions(options.cuda_options));
  std::unique_ptr<Session> s(new Session());
  s->options_ = options;
  s->label_ = label;
  const auto start = std::chrono::steady_clock::now();
  LogCapture logs;
  // ORT's exception for a provider that fails to load says only "Failed to
  // load shared library"; the loader's reason (which file is missing) is in
  // its log. Put both in the one message the user reads.
  auto with_log = [&logs](Status st) {
    if (st.ok()) return st;
    std::string detail;
    std::string missing;
    for (const auto& r : logs.Records()) {
      if (r.severity < 3 || st.message().find(r.message) != std::string::npos) continue;
      detail += "; ORT log: " + r.message;
      static const std::regex kMissing(R"(with error: (\S+): cannot open shared object file)");
      std::smatch m;
      if (missing.empty() && std::regex_search(r.message, m, kMissing)) missing = m[1];
    }
    if (!missing.empty()) {
      return Status(Code::kUnavailable, BaseName(missing) + " could not be loaded, so " + st.message() + detail);
    }
    return detail.empty() ? st : st.WithMessage(st.message() + detail);
  };
  std::string step = "setting up the " + std::string(ProviderName(options.provider)) + " execution provider";
  try {
    Ort::SessionOptions so = BuildOrtOptions(options);
    step = "loading model " + label;
    OrtPrepackedWeightsContainer* prepacked =
        options.shared_initializers != nullptr ? options.shared_initializers->prepacked() : nullptr;
    if (path != nullptr && prepacked != nullptr) {
      s->session_ = std::make_unique<Ort::Session>(Env(), path->c_str(), so, prepacked);
    } else if (path != nullptr) {
      s->session_ = std::make_unique<Ort::Session>(Env(), path->c_str(), so);
    } else if (prepacked != nullptr) {
      s->session_ = std::make_unique<Ort::Session>(Env(), bytes.data(), bytes.size(), so, prepacked);
    } else {
      s->session_ = std::make_unique<Ort::Session>(Env(), bytes.data(), bytes.size(), so);
    }
    if (options.shared_initializers != nullptr) {
      const auto records = logs.Records();
      s->shared_use_ = ReadSharedInitializerUse(records, options.log_id);
      // Records lost to the bounded buffer may be "used" lines: then what
      // ORT used is not known, and nothing may be freed on its account.
      s->shared_use_.known = s->shared_use_.known && logs.Complete(records);
    }
    step = "reading the inputs and outputs of " + label;
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < s->session_->GetInputCount(); ++i) {
      auto name = s->session_->GetInputNameAllocated(i, alloc);
      s->inputs_.push_back(DescribeType(name.get(), s->session_->GetInputTypeInfo(i)));
    }
    for (size_t i = 0; i < s->session_->GetOutputCount(); ++i) {
      auto name = s->session_->GetOutputNameAllocated(i, alloc);
      s->outputs_.push_back(DescribeType(name.get(), s->session_->GetOutputTypeInfo(i)));
    }
  } catch (const Ort::Exception& e) {
    return with_log(StatusFromOrt(e, step));
  } catch (const std::exception& e) {
    return with_log(Internal(step + ": " + e.what()));
  }
  s->load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return s;
}

Status Session::ValidateInputs(const std::vector<Tensor>& inputs) const {
  for (const auto& t : inputs) {
    const TensorInfo* info = nullptr;
    for (const auto& in : inputs_) {
      if (in.name == t.name) info = &in;
    }
    if (info == nullptr) {
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      return InvalidArgument("unexpected input '" + t.name + "' for model " + label_ + "; its inputs are: " + names);
    }
    if (t.dtype != info->dtype) {
      return InvalidArgument("input '" + t.name + "' has type " + std::string(ShortName(t.dtype)) + " but model " +
                             label_ + " expects " + std::string(ShortName(info->dtype)));
    }
    if (t.shape.size() != info->shape.size()) {
      return InvalidArgument("input '" + t.name + "' has shape " + ShapeToString(t.shape) + " but model " + label_ +
                             " expects rank " + std::to_string(info->shape.size()) + " (" +
                             ShapeToString(info->shape) + ")");
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (info->shape[d] >= 0 && info->shape[d] != t.shape[d]) {
        return InvalidArgument("input '" + t.name + "' has shape " + ShapeToString(t.shape) + " but model " +
                               label_ + " expects " + ShapeToString(info->shape) + " (dimension " +
                               std::to_string(d) + " must be " + std::to_string(info->shape[d]) + ")");
      }
    }
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
  }
  for (const auto& in : inputs_) {
    bool given = false;
    for (const auto& t : inputs) given = given || t.name == in.name;
    if (!given) return InvalidArgument("missing input '" + in.name + "' for model " + label_);
  }
  return Status::Ok();
}

int Session::run_log_severity() const {
  if (options_.shared_initializers == nullptr) return -1;
  return options_.log_severity >= 0 ? options_.log_severity : ORT_LOGGING_LEVEL_WARNING;
}

Expected<std::vector<Tensor>> Session::Run(const std::vector<Tensor>& inputs,
                                           const std::vector<std::string>& output_names, ArenaAfterRun after) const {
  return RunWith(inputs, output_names, "", after);
}

Expected<std::string> Session::RunProfiled(const std::vector<Tensor>& inputs, const std::string& prefix) const {
  const std::string dir = DirName(prefix);
  const std::string stem = BaseName(prefix) + "_";
  auto before = RealFileSystem().ListDirectory(dir);
  auto out = RunWith(inputs, {}, prefix, ArenaAfterRun::kKeep);
  if (!out.ok()) return out.status();
  auto after = RealFileSystem().ListDirectory(dir);
  if (!after.ok()) return after.status();
  for (const auto& e : *after) {
    if (e.name.rfind(stem, 0) != 0 || e.name.size() < 5 || e.name.substr(e.name.size() - 5) != ".json") continue;
    bool old = false;
    if (before.ok()) {
      for (const auto& b : *before) old = old || b.name == e.name;
    }
    if (!old) return JoinPath(dir, e.name);
  }
  return NotFound("ORT wrote no profile starting with " + prefix);
}

Expected<std::vector<Tensor>> Session::RunWith(const std::vector<Tensor>& inputs,
                                               const std::vector<std::string>& output_names,
                                               const std::string& profile_prefix, ArenaAfterRun after) const {
  for (const auto& t : inputs) ORTGPU_RETURN_IF_ERROR(RequireHostBytes(t, "model " + label_ + "'s host-tensor run"));
  ORTGPU_RETURN_IF_ERROR(ValidateInputs(inputs));
  try {
    Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::AllocatorWithDefaultOptions alloc;
    std::vector<Ort::Value> values;
    std::vector<const char*> in_names;
    std::deque<std::vector<uint8_t>> aligned;  // copies of misaligned inputs, alive through Run
    values.reserve(inputs.size());
    for (const auto& t : inputs) {
      in_names.push_back(t.name.c_str());
      const auto type = static_cast<ONNXTensorElementDataType>(t.dtype);
      if (t.dtype == DataType::kString) {
        values.push_back(ort_internal::StringTensor(alloc, t));
      } else {
        const uint8_t* bytes = t.data.data();
        // A tensor borrowed from a request body can start at any offset;
        // kernels may expect their element alignment (and CPU kernels wider
        // SIMD alignment), so a misaligned one runs from an aligned copy.
        if (reinterpret_cast<uintptr_t>(bytes) % kInputAlignment != 0) {
          aligned.emplace_back(t.data.begin(), t.data.end());
          bytes = aligned.back().data();
        }
        // ORT does not write to inputs; the cast only satisfies its signature.
        values.push_back(Ort::Value::CreateTensor(cpu, const_cast<uint8_t*>(bytes), t.data.size(), t.shape.data(),
                                                  t.shape.size(), type));
      }
    }
    std::vector<std::string> names = output_names;
    if (names.empty()) {
      for (const auto& o : outputs_) names.push_back(o.name);
    }
    std::vector<const char*> out_names;
    for (const auto& n : names) out_names.push_back(n.c_str());
    // On a session that captures CUDA graphs this run neither captures nor
    // replays one: a replay would leave these unbound outputs empty.
    Ort::RunOptions run_options = ort_internal::PlainRunOptions(*this);
    if (!profile_prefix.empty()) run_options.EnableProfiling(profile_prefix.c_str());
    if (after == ArenaAfterRun::kShrink) ort_internal::ShrinkArenaAfterRun(run_options, *this);
    auto results = session_->Run(run_options, in_names.data(), values.data(), values.size(),
                                 out_names.data(), out_names.size());
    std::vector<Tensor> out;
    out.reserve(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, ort_internal::ToHost(names[i], results[i]));
      out.push_back(std::move(t));
    }
    return out;
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "running model " + label_);
  } catch (const std::exception& e) {
    return Internal("running model " + label_ + ": " + e.what());
  }
}

Expected<std::string> Session::EndProfiling() {
  if (options_.profile_prefix.empty()) return FailedPrecondition("profiling was not enabled for " + label_);
  try {
    Ort::AllocatorWithDefaultOptions alloc;
    auto name = session_->EndProfilingAllocated(alloc);
    return std::string(name.get());
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "ending the profile of " + label_);
  }
}

}  // namespace ortgpu
