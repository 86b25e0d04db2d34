// ModelRepository: reads Triton's model repository layout,
//
//   ROOT/<model>/config.pbtxt          (optional)
//   ROOT/<model>/<version>/model.onnx  (version: a positive integer)
//
// or a single model file served as one model (`ortgpu serve --model PATH`).
// It only looks at files (through the FileSystem seam); parsing the config and
// loading sessions is the loader's job. Immutable after construction;
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model_config.pb.h"
#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu::serve {

struct ModelSource {
  std::string name;
  std::string dir;            // ROOT/<model>; for a single file, its folder
  bool has_config = false;
  std::string config_text;    // config.pbtxt's text when has_config
  std::string config_path;    // for messages
  std::vector<int64_t> versions;  // numeric version folders, ascending
  // Where a version's model file lies; for a single file always that file.
  std::string ModelPath(int64_t version, const std::string& filename) const;
  std::string single_file;    // non-empty for --model PATH
  // Per version: the names, sizes and modification times of every file in
  // its folder (two levels deep), so a poll notices a model file replaced
  // in place. Equal strings: nothing changed.
  std::map<int64_t, std::string> fingerprints;
};

class ModelRepository {
 public:
  // REQUIRES: `fs` outlives the repository.
  static ModelRepository FromDirectory(std::string root, const FileSystem& fs = RealFileSystem());
  // The file is model "<stem>" (resnet50.onnx -> "resnet50") version 1;
  // `config_path` (serve --config FILE.pbtxt, "" for none) is its
  // config.pbtxt, read on every ReadModel like a repository model's.
  static ModelRepository FromModelFile(std::string path, const FileSystem& fs = RealFileSystem(),
                                       std::string config_path = "");

  // Model names (sub-folders of the root), sorted. NotFound when the root
  // does not exist.
  Expected<std::vector<std::string>> ListModels() const;
  // Reads one model's folder. NotFound for an unknown model, and for a name
  // that starts with '.' (hidden folders such as .staging are never models).
  Expected<ModelSource> ReadModel(const std::string& name) const;

  const std::string& root() const { return root_; }

 private:
  ModelRepository(std::string root, std::string single_file, const FileSystem& fs, std::string config_path = "")
      : root_(std::move(root)), single_file_(std::move(single_file)), config_path_(std::move(config_path)), fs_(&fs) {}
  std::string root_;
  std::string single_file_;
  std::string config_path_;  // --config for a single file
  const FileSystem* fs_;
};

// Whether a folder name is a version: a positive decimal integer of at most
// 18 digits without a leading zero ("1", "12"; not "01", "v1").
bool IsVersionName(std::string_view name);

// The versions a policy serves out of `available` (ascending): latest
// (num_versions highest, default 1), all, or specific (those present).
std::vector<int64_t> SelectVersions(const inference::ModelVersionPolicy& policy, const std::vector<int64_t>& available);

}  // namespace ortgpu::serve
