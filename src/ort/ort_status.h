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
// to do. A kernel that rejects its inputs while running ("Non-zero status
// code returned while running Pad node"), other than a CUDA library or
// memory failure, is InvalidArgument: the inputs' shapes or values do not
// suit the graph, which the caller can change; its message then contains
// kRunTimeRejection.
Status StatusFromOrt(const Ort::Exception& e, const std::string& what);

// The words StatusFromOrt puts in the message of a run-time rejection, so
// callers can add what they know about the inputs.
inline constexpr std::string_view kRunTimeRejection = "rejected the inputs while running";

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
