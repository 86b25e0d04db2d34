// Conversion of ONNX Runtime exceptions into Status: the only place that
// knows ORT's error codes and the form of its messages. StatusFromOrt is
// used by code inside src/ort/ only; the text helpers are pure and
// thread-safe, for any caller.
#pragma once

#include <string>
#include <string_view>

#include "status/status.h"

namespace Ort {
struct Exception;
}

namespace ortgpu {

// `what` says what ortgpu was doing ("loading model x.onnx"); the message adds
// ORT's text (without its source locations) and, for known failures, what
// to do. ORT gives only an OrtErrorCode, too coarse for the decisions serve
// makes, so this is the one place that reads ORT's words to set a typed
// Reason (status.h); every caller decides by the Reason:
// - A kernel that rejects its inputs while running ("Non-zero status code
//   returned while running Pad node"), other than a CUDA library or memory
//   failure, is InvalidArgument with Reason::kInputsRejectedWhileRunning: the
//   inputs' shapes or values do not suit the graph, which the caller can
//   change; its message says so in the words of kRunTimeRejection.
// - ORT's refusal to capture a CUDA graph (IsCudaGraphRefusalMessage) has
//   Reason::kCudaGraphRefused.
Status StatusFromOrt(const Ort::Exception& e, const std::string& what);

// The words StatusFromOrt puts in the message of a run-time rejection, for
// the person who reads it (callers decide by Reason, not by these words).
inline constexpr std::string_view kRunTimeRejection = "rejected the inputs while running";

// Whether an ORT message refuses CUDA graph capture for the session: "This
// session cannot use the graph capture feature as requested by the user as
// all compute graph nodes have not been partitioned to the
// CUDAExecutionProvider" (or "... as the model has control flow nodes ...";
// ORT before 1.17 said "the CUDA Graph feature").
bool IsCudaGraphRefusalMessage(std::string_view message);

// The node an ORT run failure names, as "node 'pad0' (Pad)", from ORT's
// "Non-zero status code returned while running Pad node. Name:'pad0'";
// "" when the message names none.
std::string FailingNode(std::string_view message);

// ORT's own explanation in a run failure: the text after its last "Status
// Message: " (the innermost node's), or the whole message when it has none.
std::string FailureExplanation(std::string_view message);

// `message` without ORT's source locations: each "path/file.cc:123 " and the
// C++ function signature after it ("virtual onnxruntime::common::Status
// onnxruntime::Pad::Compute(onnxruntime::OpKernelContext*) const ") are
// removed, the explanation that follows is kept.
std::string WithoutSourceLocations(std::string_view message);

// Whether an ORT message says memory ran out: CUDA's and the host's
// allocators, and ORT's arena at its limit (gpu_mem_limit). StatusFromOrt
// makes those ResourceExhausted (503 / RESOURCE_EXHAUSTED to a client),
// never a rejection of the inputs.
bool IsOutOfMemoryMessage(const std::string& message);

// Explanations for ORT messages users commonly meet (library load failures,
// out of memory, bad models); "" when none applies.
std::string HintForOrtMessage(const std::string& message);

}  // namespace ortgpu
