#include "serve/repository/load_override.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

namespace ortgpu::serve {
namespace {

constexpr std::string_view kConfigLabel = "load parameter 'config'";

// OK when `path` (a file: parameter without its prefix) names a file inside
// the model's folder: relative, no "..", "." or empty component, no NUL.
Status CheckFilePath(const std::string& path) {
  auto refuse = [&](std::string_view why) {
    return InvalidArgument(fmt::format("load parameter 'file:{}' {}; name files as file:<version>/<name> inside the "
                                       "model's folder, e.g. file:1/model.onnx",
                                       path, why));
  };
  if (path.empty()) return refuse("names no file");
  if (path.front() == '/') return refuse("is an absolute path");
  if (path.find('\0') != std::string::npos) return refuse("contains a NUL byte");
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part(path.data() + start, slash - start);
    if (part == "..") return refuse("leaves the model's folder ('..')");
    if (part.empty() || part == ".") return refuse("has an empty or '.' path component");
    start = slash + 1;
  }
  return Status::Ok();
}

Expected<std::string> ConfigText(const std::string& model, const std::string& json) {
  inference::ModelConfig config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &config, options);
  if (!st.ok()) {
    return InvalidArgument(fmt::format("{} is not a model configuration in JSON: {}; send the JSON form that GET "
                                       "/v2/models/<model>/config returns (field names as in model_config.proto)",
                                       kConfigLabel, std::string(st.message())));
  }
  if (!config.name().empty() && config.name() != model) {
    return InvalidArgument(fmt::format("{} names the model '{}' but the load is for '{}'; make them equal or leave "
                                       "'name' out",
                                       kConfigLabel, config.name(), model));
  }
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(config, &text)) {
    return Internal(fmt::format("{} could not be printed as protobuf text", kConfigLabel));
  }
  // Text format leaves out zeros; an explicit max_batch_size 0 must stay
  // visible (it tells the loader not to make the model batch).
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (config.max_batch_size() == 0 && j.is_object() && (j.contains("max_batch_size") || j.contains("maxBatchSize"))) {
    text += "max_batch_size: 0\n";
  }
  return text;
}

}  // namespace

Expected<std::shared_ptr<const LoadOverride>> LoadOverride::Prepare(const std::string& model,
                                                                    const ModelLoadParameters& parameters,
                                                                    const std::string& temp_root) {
  if (model.empty() || model[0] == '.' || model.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    return InvalidArgument(fmt::format("'{}' cannot name a model loaded with parameters; use a name without '/' that "
                                       "does not start with '.'",
                                       model));
  }
  if (!parameters.config_json) {
    return InvalidArgument(fmt::format("load parameter 'file:{}' needs a 'config' parameter too: files replace the "
                                       "whole model folder, so send the model's configuration as JSON with them",
                                       parameters.files.begin()->first));
  }
  std::shared_ptr<LoadOverride> o(new LoadOverride());
  o->model_ = model;
  ORTGPU_ASSIGN_OR_RETURN(o->config_text_, ConfigText(model, *parameters.config_json));
  if (parameters.files.empty()) return std::shared_ptr<const LoadOverride>(std::move(o));

  bool has_version = false;
  for (const auto& [path, bytes] : parameters.files) {
    ORTGPU_RETURN_IF_ERROR(CheckFilePath(path));
    const size_t slash = path.find('/');
    if (slash != std::string::npos && IsVersionName(std::string_view(path).substr(0, slash))) has_version = true;
  }
  if (!has_version) {
    return InvalidArgument(fmt::format("the file: parameters of model '{}' put no file in a version folder; send the "
                                       "model as file:<version>/model.onnx, e.g. file:1/model.onnx",
                                       model));
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string root = temp_root.empty() ? fs::temp_directory_path(ec).string() : temp_root;
  std::string folder = JoinPath(root.empty() ? "/tmp" : root, "ortgpu-load-XXXXXX");
  if (::mkdtemp(folder.data()) == nullptr) {
    return Internal(fmt::format("cannot make a temporary folder for the file: parameters of model '{}' ({}); check "
                                "that the server's temporary folder ($TMPDIR) is writable",
                                model, std::strerror(errno)));
  }
  o->folder_ = folder;  // from here the destructor removes it
  for (const auto& [path, bytes] : parameters.files) {
    const fs::path target = fs::path(folder) / model / path;
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out;
    if (!ec) out.open(target, std::ios::binary | std::ios::trunc);
    if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (out) out.close();
    if (ec || !out) {
      return InvalidArgument(fmt::format("load parameter 'file:{}' cannot be written to the model's temporary folder "
                                         "({}); check that no other file: parameter uses it as a folder, and the "
                                         "server's free disk space",
                                         path, ec ? ec.message() : std::strerror(errno)));
    }
  }
  return std::shared_ptr<const LoadOverride>(std::move(o));
}

LoadOverride::~LoadOverride() {
  if (folder_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
}

Expected<ModelSource> LoadOverride::Source(const ModelRepository& repository, const std::string& model) const {
  ModelSource source;
  if (has_files()) {
    ORTGPU_ASSIGN_OR_RETURN(source, ModelRepository::FromDirectory(folder_).ReadModel(model));
  } else {
    ORTGPU_ASSIGN_OR_RETURN(source, repository.ReadModel(model));
  }
  source.has_config = true;
  source.config_text = config_text_;
  source.config_path = std::string(kConfigLabel);
  return source;
}

std::string LoadOverride::ClientPaths(std::string text) const {
  if (folder_.empty()) return text;
  auto replace_all = [&text](const std::string& from, std::string_view to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  const std::string dir = JoinPath(folder_, model_);
  replace_all(dir + "/", "file:");
  replace_all(dir, "the model's file: parameters");
  replace_all(folder_, "the server's temporary folder");
  return text;
}

}  // namespace ortgpu::serve
