#include "ort/ort_status.h"

#include <cctype>

#include <onnxruntime_cxx_api.h>

namespace ortgpu {
namespace {

bool IsSourceExtension(std::string_view ext) {
  return ext == "cc" || ext == "cpp" || ext == "cxx" || ext == "c" || ext == "h" || ext == "hpp" || ext == "cu" ||
         ext == "cuh";
}

// Length of a C++ function signature starting at `s` ("virtual
// onnxruntime::common::Status onnxruntime::Pad::Compute(...) const" and an
// optional " [with T = float]"), or 0 when `s` does not start with one: a
// few words, then a parenthesised parameter list.
size_t SignatureLength(std::string_view s) {
  const size_t open = s.find('(');
  if (open == std::string_view::npos || open == 0 || open > 400) return 0;
  for (size_t i = 0; i < open; ++i) {
    const char c = s[i];
    // A sentence before the '(' means there is no signature here.
    if (c == '.' && i + 1 < open && s[i + 1] == ' ') return 0;
  }
  int depth = 0;
  size_t i = open;
  for (; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) break;
  }
  if (i == s.size()) return 0;
  ++i;
  for (std::string_view suffix : {" const", " &&", " &"}) {
    if (s.substr(i, suffix.size()) == suffix) i += suffix.size();
  }
  if (s.substr(i, 2) == " [") {
    const size_t close = s.find(']', i);
    if (close != std::string_view::npos) i = close + 1;
  }
  return i;
}

}  // namespace

std::string FailingNode(std::string_view m) {
  // A node inside a subgraph (If, Loop) is named last: the innermost is the one that failed.
  constexpr std::string_view kRunning = "while running ";
  const size_t at = m.rfind(kRunning);
  if (at == std::string_view::npos) return "";
  const size_t op_start = at + kRunning.size();
  const size_t op_end = m.find(" node.", op_start);
  if (op_end == std::string_view::npos) return "";
  constexpr std::string_view kName = "Name:'";
  const size_t name_start = m.find(kName, op_end);
  const size_t name_end = name_start == std::string_view::npos ? name_start : m.find('\'', name_start + kName.size());
  const std::string op(m.substr(op_start, op_end - op_start));
  if (name_end == std::string_view::npos) return "a " + op + " node";
  const std::string name(m.substr(name_start + kName.size(), name_end - name_start - kName.size()));
  return "node '" + name + "' (" + op + ")";
}

std::string FailureExplanation(std::string_view m) {
  constexpr std::string_view kStatus = "Status Message: ";
  const size_t at = m.rfind(kStatus);
  std::string_view out = at == std::string_view::npos ? m : m.substr(at + kStatus.size());
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.remove_suffix(1);
  return std::string(out);
}

std::string WithoutSourceLocations(std::string_view m) {
  std::string out;
  out.reserve(m.size());
  size_t i = 0;
  while (i < m.size()) {
    // A location is "<path>.<ext>:<digits>" followed by a space.
    const size_t colon = m.find(':', i);
    if (colon == std::string_view::npos) break;
    size_t start = colon;
    while (start > i && !std::isspace(static_cast<unsigned char>(m[start - 1])) && m[start - 1] != '\'' &&
           m[start - 1] != '"') {
      --start;
    }
    const std::string_view file = m.substr(start, colon - start);
    const size_t dot = file.rfind('.');
    size_t digits = colon + 1;
    while (digits < m.size() && std::isdigit(static_cast<unsigned char>(m[digits]))) ++digits;
    const bool location = dot != std::string_view::npos && IsSourceExtension(file.substr(dot + 1)) &&
                          file.find('/') != std::string_view::npos && digits > colon + 1;
    if (!location) {
      out.append(m.substr(i, colon + 1 - i));
      i = colon + 1;
      continue;
    }
    out.append(m.substr(i, start - i));
    i = digits;
    if (i < m.size() && m[i] == ' ') {
      ++i;
      i += SignatureLength(m.substr(i));
      if (i < m.size() && m[i] == ' ') ++i;
    }
  }
  out.append(m.substr(std::min(i, m.size())));
  return out;
}

bool IsOutOfMemoryMessage(const std::string& m) {
  auto has = [&m](const char* s) { return m.find(s) != std::string::npos; };
  // The last: ORT's arena (BFCArena) at its limit, e.g. the CUDA EP's
  // gpu_mem_limit ("Available memory of 166403584 is smaller than requested
  // bytes of 411041792").
  return has("out of memory") || has("Failed to allocate") || has("CUDA failure 2") ||
         has("cudaErrorMemoryAllocation") || has("ALLOC_FAILED") ||
         (has("Available memory of") && has("smaller than requested bytes"));
}

bool IsCudaGraphRefusalMessage(std::string_view m) {
  // ORT's InferenceSession::Initialize, the only place that refuses a
  // capture; it raises ORT_FAIL, which says nothing more.
  return m.find("cannot use the graph capture feature") != std::string_view::npos ||
         m.find("cannot use the CUDA Graph feature") != std::string_view::npos;
}

std::string HintForOrtMessage(const std::string& m) {
  auto has = [&m](const char* s) { return m.find(s) != std::string::npos; };
  if (has("libonnxruntime_providers_cuda.so") || has("cannot open shared object file") ||
      has("Failed to load shared library")) {
    return "a library the execution provider needs could not be loaded; run `ortgpu doctor` to see "
           "which one, where copies exist, and the LD_LIBRARY_PATH or package that fixes it";
  }
  if (IsOutOfMemoryMessage(m)) {
    // gpu_mem_limit only helps when the GPU's arena ran out, not the host's.
    if (has("CUDA") || has("Cuda") || has("cuda") || has("GPU")) {
      return "the device ran out of memory; lower the batch size or the instance count, or set gpu_mem_limit";
    }
    if (has("Available memory of")) {
      return "a memory arena reached its limit (on a GPU instance, the CUDA EP's gpu_mem_limit, or the GPU's own "
             "memory); lower the batch size or the instance count, or raise gpu_mem_limit";
    }
    return "the host ran out of memory; lower the batch size, the input shapes or the concurrency, or give the "
           "process more memory";
  }
  if (has("Protobuf parsing failed") || has("INVALID_PROTOBUF")) {
    return "the file is not a valid ONNX model (truncated or corrupt?); re-export it";
  }
  if (has("Could not find an implementation")) {
    return "an operator in the model has no kernel for this type or opset; check the model's opset and op types";
  }
  if (has("CUDA driver version is insufficient") || has("cudaErrorInsufficientDriver")) {
    return "the NVIDIA driver is older than the CUDA runtime needs; run `ortgpu doctor` for the minimum version";
  }
  if (has("no CUDA-capable device") || has("cudaErrorNoDevice")) {
    return "no GPU is visible to this process; check CUDA_VISIBLE_DEVICES and the container's GPU access";
  }
  return "";
}

Status StatusFromOrt(const Ort::Exception& e, const std::string& what) {
  Code code = Code::kInternal;
  switch (e.GetOrtErrorCode()) {
    case ORT_NO_SUCHFILE: code = Code::kNotFound; break;
    case ORT_INVALID_ARGUMENT:
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
    case ORT_NO_MODEL: code = Code::kInvalidArgument; break;
    case ORT_NOT_IMPLEMENTED: code = Code::kUnimplemented; break;
    case ORT_EP_FAIL: code = Code::kUnavailable; break;
    case ORT_MODEL_LOADED:
    case ORT_NOT_FOUND: code = Code::kNotFound; break;
    default: code = Code::kInternal; break;
  }
  std::string msg = WithoutSourceLocations(e.what());
  while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
  const bool gpu_library = msg.find("CUDA") != std::string::npos || msg.find("CUDNN") != std::string::npos ||
                           msg.find("cuDNN") != std::string::npos || msg.find("CUBLAS") != std::string::npos;
  const bool rejected = msg.find("Non-zero status code returned while running") != std::string::npos && !gpu_library;
  if (rejected) code = Code::kInvalidArgument;
  if (IsOutOfMemoryMessage(msg)) code = Code::kResourceExhausted;
  if (msg.find("Failed to load library") != std::string::npos ||
      msg.find("Failed to load shared library") != std::string::npos ||
      msg.find("cannot open shared object file") != std::string::npos) {
    code = Code::kUnavailable;
  }
  Reason reason = Reason::kNone;
  if (IsCudaGraphRefusalMessage(msg)) {
    reason = Reason::kCudaGraphRefused;
  } else if (rejected && code == Code::kInvalidArgument) {
    reason = Reason::kInputsRejectedWhileRunning;
  }
  std::string text = what + ": " +
                     (reason == Reason::kInputsRejectedWhileRunning ? "the graph " + std::string(kRunTimeRejection) + ": " : "") +
                     msg;
  const std::string hint = HintForOrtMessage(msg);
  if (!hint.empty()) text += " (" + hint + ")";
  return Status(code, std::move(text), reason);
}

}  // namespace ortgpu
