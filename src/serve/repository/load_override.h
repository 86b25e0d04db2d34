// LoadOverride: what Triton's load parameters make of one load (the model
// repository extension, docs/SERVING.md "Loading with a config override"):
//
//   config           a ModelConfig in JSON replaces the model's config.pbtxt;
//                    the model's files still come from the repository.
//   config + file:   the files form the whole model folder ("file:1/model.onnx"
//                    is <folder>/1/model.onnx) in a private temporary folder
//                    the server owns (mode 0700, under options' temp root,
//                    never inside the repository); the repository's folder of
//                    that name, if any, is not read.
//
// The temporary folder lives as long as the LoadOverride (shared by the
// server core's record of the model while versions loaded from it serve)
// and is removed with it: on unload, on a load that replaces it, at exit.
//
// Immutable after Prepare; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "model_config.pb.h"
#include "serve/model_server.h"
#include "serve/repository/model_repository.h"
#include "status/expected.h"

namespace ortgpu::serve {

class LoadOverride {
 public:
  // Checks `parameters` and, with files, writes them into a new private
  // folder under `temp_root` ("": the system's, $TMPDIR or /tmp).
  // InvalidArgument saying why for a config that is not a ModelConfig in
  // JSON (protobuf's message, e.g. the unknown field), file: parameters
  // without a config, a file path that is absolute, has a "..", "." or empty
  // component, or no file under a version folder; Internal when the folder
  // cannot be written. No message carries a server path.
  // REQUIRES: !parameters.empty().
  static Expected<std::shared_ptr<const LoadOverride>> Prepare(const std::string& model,
                                                               const ModelLoadParameters& parameters,
                                                               const std::string& temp_root);
  ~LoadOverride();
  LoadOverride(const LoadOverride&) = delete;
  LoadOverride& operator=(const LoadOverride&) = delete;

  // The model as this load sees it: read from the private folder (files) or
  // from `repository` (config only), with the config replaced. Its
  // config_text is the config in protobuf text form (config_path names the
  // load parameter), so the core parses it as it parses a config.pbtxt.
  Expected<ModelSource> Source(const ModelRepository& repository, const std::string& model) const;

  // True when the model's files came with the load (a private folder).
  bool has_files() const { return !folder_.empty(); }

  // `text` with the private folder's paths written as the parameters that
  // made them ("<folder>/m/1/model.onnx" -> "file:1/model.onnx"), for
  // messages that reach clients.
  std::string ClientPaths(std::string text) const;

 private:
  LoadOverride() = default;
  std::string config_text_;  // protobuf text form of the parsed config
  std::string folder_;       // the private folder; "" without files
  std::string model_;
};

}  // namespace ortgpu::serve
