// Conversion of ONNX Runtime exceptions into Status: the only place that
// knows ORT's error codes. Used by code inside src/ort/ only.
#pragma once

#include <string>

#include "status/status.h"

namespace Ort {
struct Exception;
}

namespace ortgpu {

// `what` says what ortgpu was doing ("loading model x.onnx"); the message adds
// ORT's text and, for known failures, what to do.
Status StatusFromOrt(const Ort::Exception& e, const std::string& what);

// Explanations for ORT messages users commonly meet (library load failures,
// out of memory, bad models); "" when none applies.
std::string HintForOrtMessage(const std::string& message);

}  // namespace ortgpu
