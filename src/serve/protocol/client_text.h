// ClientText: the form of a message that may leave the server. Error bodies,
// 503 bodies, the repository index and anything else a client reads must not
// reveal the server's file system or ONNX Runtime's source tree, so every
// such text passes through here:
//
//   - a path under one of the roots (the model repository, the folder of a
//     --model file) becomes relative to it ("resnet/1/model.onnx");
//   - any other absolute file path (a file name with an extension, or a
//     path that exists on this machine) is reduced to its file name (ORT's
//     source locations are removed before, where ORT's messages enter:
//     ort/ort_status.h); URL paths ("/v2/models/...") are left alone.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ortgpu::serve::protocol {

// `roots` are absolute or relative folder paths as the server was given them
// (a trailing '/' is ignored; empty entries are skipped).
std::string ClientText(std::string_view text, const std::vector<std::string>& roots = {});

}  // namespace ortgpu::serve::protocol
