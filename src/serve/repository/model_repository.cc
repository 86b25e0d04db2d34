#include "serve/repository/model_repository.h"

#include <algorithm>
#include <cctype>

namespace ortgpu::serve {
namespace {

std::string Stem(const std::string& path) {
  std::string base = BaseName(path);
  const auto dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// "name size mtime;" for every file under `dir`, `depth` levels deep, in
// name order. A file that cannot be read contributes its name only.
std::string FolderFingerprint(const FileSystem& fs, const std::string& dir, int depth) {
  auto entries = fs.ListDirectory(dir);
  if (!entries.ok()) return "?";
  std::string out;
  for (const auto& e : *entries) {
    const std::string path = JoinPath(dir, e.name);
    if (e.is_directory) {
      if (depth > 1) out += e.name + "/{" + FolderFingerprint(fs, path, depth - 1) + "}";
      continue;
    }
    out += e.name;
    if (auto size = fs.FileSize(path); size.ok()) out += " " + std::to_string(*size);
    if (auto mtime = fs.ModifiedNanos(path); mtime.ok()) out += " " + std::to_string(*mtime);
    out += ";";
  }
  return out;
}

}  // namespace

bool IsVersionName(std::string_view s) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string ModelSource::ModelPath(int64_t version, const std::string& filename) const {
  if (!single_file.empty()) return single_file;
  return JoinPath(JoinPath(dir, std::to_string(version)), filename.empty() ? "model.onnx" : filename);
}

ModelRepository ModelRepository::FromDirectory(std::string root, const FileSystem& fs) {
  return ModelRepository(std::move(root), "", fs);
}

ModelRepository ModelRepository::FromModelFile(std::string path, const FileSystem& fs, std::string config_path) {
  std::string dir = DirName(path);
  return ModelRepository(std::move(dir), std::move(path), fs, std::move(config_path));
}

Expected<std::vector<std::string>> ModelRepository::ListModels() const {
  if (!single_file_.empty()) {
    if (!fs_->Exists(single_file_)) {
      return NotFound("model file " + single_file_ + " does not exist; pass the path of an .onnx file to --model");
    }
    return std::vector<std::string>{Stem(single_file_)};
  }
  if (!fs_->IsDirectory(root_)) {
    return NotFound("model repository " + root_ +
                    " is not a folder; lay models out as <repository>/<model>/<version>/model.onnx");
  }
  ORTGPU_ASSIGN_OR_RETURN(auto entries, fs_->ListDirectory(root_));
  std::vector<std::string> out;
  for (const auto& e : entries) {
    if (e.is_directory && !e.name.empty() && e.name[0] != '.') out.push_back(e.name);
  }
  return out;
}

Expected<ModelSource> ModelRepository::ReadModel(const std::string& name) const {
  ModelSource src;
  src.name = name;
  if (!single_file_.empty()) {
    if (name != Stem(single_file_)) return NotFound("unknown model '" + name + "'; this server serves '" + Stem(single_file_) + "'");
    if (!fs_->Exists(single_file_)) return NotFound("model file " + single_file_ + " does not exist");
    src.dir = root_;
    src.single_file = single_file_;
    src.versions = {1};
    if (!config_path_.empty()) {
      src.config_path = config_path_;
      ORTGPU_ASSIGN_OR_RETURN(src.config_text, fs_->ReadFile(config_path_));
      src.has_config = true;
    }
    return src;
  }
  src.dir = JoinPath(root_, name);
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || !fs_->IsDirectory(src.dir)) {
    return NotFound("model '" + name + "' is not in repository " + root_ + " (no folder " + src.dir + ")");
  }
  src.config_path = JoinPath(src.dir, "config.pbtxt");
  if (fs_->Exists(src.config_path)) {
    ORTGPU_ASSIGN_OR_RETURN(src.config_text, fs_->ReadFile(src.config_path));
    src.has_config = true;
  }
  ORTGPU_ASSIGN_OR_RETURN(auto entries, fs_->ListDirectory(src.dir));
  for (const auto& e : entries) {
    if (e.is_directory && IsVersionName(e.name)) src.versions.push_back(std::stoll(e.name));
  }
  std::sort(src.versions.begin(), src.versions.end());
  for (int64_t v : src.versions) src.fingerprints[v] = FolderFingerprint(*fs_, JoinPath(src.dir, std::to_string(v)), 2);
  return src;
}

std::vector<int64_t> SelectVersions(const inference::ModelVersionPolicy& policy, const std::vector<int64_t>& available) {
  std::vector<int64_t> sorted = available;
  std::sort(sorted.begin(), sorted.end());
  if (policy.has_all()) return sorted;
  if (policy.has_specific()) {
    std::vector<int64_t> out;
    for (int64_t v : sorted) {
      const auto& want = policy.specific().versions();
      if (std::find(want.begin(), want.end(), v) != want.end()) out.push_back(v);
    }
    return out;
  }
  const size_t n = policy.has_latest() && policy.latest().num_versions() > 0 ? policy.latest().num_versions() : 1;
  if (sorted.size() <= n) return sorted;
  return std::vector<int64_t>(sorted.end() - static_cast<std::ptrdiff_t>(n), sorted.end());
}

}  // namespace ortgpu::serve
