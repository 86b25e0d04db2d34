#include "tune/model_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "tune/tool_measurer.h"

namespace ortgpu::tune {
namespace fs = std::filesystem;
namespace {

// serve's rule for a version folder's name: digits, no leading zero.
bool IsVersionFolder(const fs::path& p) {
  const std::string s = p.filename().string();
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Collects the first parse error with its line and column.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (text.empty()) text = fmt::format("{}:{}: {}", line + 1, column + 1, message);
  }
  std::string text;
};

struct ParsedBase {
  inference::ModelConfig config;
  bool sets_max_batch_size = false;
};

Expected<ParsedBase> ReadConfig(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path.string() + "; check its permissions");
  std::stringstream text;
  text << in.rdbuf();
  ParsedBase out;
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  google::protobuf::TextFormat::ParseInfoTree where;
  parser.RecordErrorsTo(&errors);
  // serve reads past fields it does not know (with a warning); so does tune,
  // and keeps only what the message holds.
  parser.AllowUnknownField(true);
  parser.WriteLocationsTo(&where);
  if (!parser.ParseFromString(text.str(), &out.config)) {
    return InvalidArgument(fmt::format("{}:{}; fix it (ortgpu serve reads the same file) or tune the .onnx file with "
                                       "--output to write a fresh config",
                                       path.string(), errors.text));
  }
  // proto3 cannot tell `max_batch_size: 0` from an absent field; the parse
  // tree can.
  const auto* field = inference::ModelConfig::descriptor()->FindFieldByName("max_batch_size");
  out.sets_max_batch_size = where.GetLocation(field, -1).line >= 0;
  return out;
}

std::string ModelFileName(const std::optional<inference::ModelConfig>& base) {
  return base && !base->default_model_filename().empty() ? base->default_model_filename() : "model.onnx";
}

// The highest version folder of `folder` that holds `file`.
Expected<fs::path> HighestVersion(const fs::path& folder, const std::string& file) {
  std::vector<std::pair<int64_t, fs::path>> versions;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    if (e.is_directory() && IsVersionFolder(e.path())) versions.emplace_back(std::stoll(e.path().filename()), e.path());
  }
  std::sort(versions.begin(), versions.end());
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    if (fs::is_regular_file(it->second / file)) return it->second / file;
  }
  return InvalidArgument(fmt::format("{} is a folder, but no version folder of it holds {} (looked for {}/<version>/{}); "
                                     "lay the model out as REPO/NAME/1/{} or pass the .onnx file",
                                     folder.string(), file, folder.string(), file, file));
}

std::string Dims(const google::protobuf::RepeatedField<int32_t>& sizes) {
  std::string out = "[";
  for (int i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

std::string GroupText(const inference::ModelConfig& c) {
  if (c.instance_group_size() == 0) return "none";
  std::string out;
  for (const auto& g : c.instance_group()) {
    out += fmt::format("{}count {} {}", out.empty() ? "" : ", ", g.count(), inference::ModelInstanceGroup::Kind_Name(g.kind()));
  }
  return out;
}

std::string CudaParameter(const inference::ModelConfig& c, const std::string& key) {
  for (const auto& a : c.optimization().execution_accelerators().gpu_execution_accelerator()) {
    if (a.name() != "cuda") continue;
    auto it = a.parameters().find(key);
    if (it != a.parameters().end()) return it->second;
  }
  return "unset";
}

std::string ModelParameter(const inference::ModelConfig& c, const std::string& key) {
  auto it = c.parameters().find(key);
  return it == c.parameters().end() ? "unset" : it->second.string_value();
}

}  // namespace

Expected<TuneInput> ResolveTuneInput(const std::string& path, const std::string& output_dir) {
  TuneInput in;
  std::error_code ec;
  const fs::path p(path);
  if (path.empty()) return InvalidArgument("a model is required: ortgpu tune MODEL.onnx|REPO/NAME/ ...");
  if (!fs::exists(p, ec)) return InvalidArgument(path + " does not exist; pass an .onnx file or a model folder (REPO/NAME/)");
  if (!fs::is_directory(p, ec)) {
    if (output_dir.empty()) return InvalidArgument("--output DIR is required: the model folder tune writes");
    in.model_file = path;
    in.output_dir = output_dir;
    return in;
  }
  // A version folder (REPO/NAME/3) stands for its model folder at that version.
  const fs::path dir = p.filename().empty() ? p.parent_path() : p;
  const bool version_folder = IsVersionFolder(dir) && !fs::exists(dir / "config.pbtxt", ec);
  in.folder = (version_folder ? dir.parent_path() : dir).string();
  const fs::path config = fs::path(in.folder) / "config.pbtxt";
  if (fs::exists(config, ec)) {
    ORTGPU_ASSIGN_OR_RETURN(ParsedBase parsed, ReadConfig(config));
    in.config_path = config.string();
    in.base = std::move(parsed.config);
    if (parsed.sets_max_batch_size) in.config_max_batch_size = in.base->max_batch_size();
  }
  const std::string file = ModelFileName(in.base);
  if (version_folder) {
    if (!fs::is_regular_file(dir / file)) {
      return InvalidArgument(fmt::format("{} is a version folder without {}; pass the model folder or the .onnx file",
                                         dir.string(), file));
    }
    in.model_file = (dir / file).string();
  } else {
    ORTGPU_ASSIGN_OR_RETURN(fs::path found, HighestVersion(dir, file));
    in.model_file = found.string();
  }
  in.output_dir = output_dir.empty() ? in.folder : output_dir;
  in.in_place = fs::weakly_canonical(in.output_dir, ec) == fs::weakly_canonical(in.folder, ec);
  return in;
}

void BoundTraitsByConfig(const TuneInput& input, ModelTraits& traits, std::vector<std::string>* notes) {
  if (!input.config_max_batch_size) return;
  const int64_t configured = *input.config_max_batch_size;
  // Below the largest searched batch, the config removes batches: say so.
  if (notes != nullptr && configured < traits.max_batch_size) {
    notes->push_back(configured == 0
                         ? fmt::format("{} sets max_batch_size 0 (no batching): batch 1 only", input.config_path)
                         : fmt::format("{} sets max_batch_size {}: batches above it are not searched",
                                       input.config_path, configured));
  }
  traits.max_batch_size = configured;
}

std::optional<inference::ModelConfig> ScratchBase(const TuneInput& input) {
  if (!input.base) return std::nullopt;
  inference::ModelConfig c = *input.base;
  c.clear_name();
  c.clear_default_model_filename();
  c.clear_version_policy();
  auto* warmups = c.mutable_model_warmup();
  warmups->erase(std::remove_if(warmups->begin(), warmups->end(),
                                [](const inference::ModelWarmup& w) {
                                  return std::any_of(w.inputs().begin(), w.inputs().end(), [](const auto& kv) {
                                    return kv.second.has_input_data_file();
                                  });
                                }),
                 warmups->end());
  return c;
}

std::optional<inference::ModelConfig> OutputBase(const TuneInput& input) {
  if (!input.base || input.in_place) return input.base;
  inference::ModelConfig c = *input.base;
  const std::string folder_name = fs::path(input.output_dir).filename().empty()
                                      ? fs::path(input.output_dir).parent_path().filename().string()
                                      : fs::path(input.output_dir).filename().string();
  if (!c.name().empty()) c.set_name(folder_name);
  c.clear_default_model_filename();
  c.clear_version_policy();
  return c;
}

std::vector<std::string> DescribeChanges(const std::optional<inference::ModelConfig>& before,
                                         const inference::ModelConfig& after) {
  const inference::ModelConfig b = before.value_or(inference::ModelConfig());
  std::vector<std::string> out;
  auto diff = [&](const std::string& what, const std::string& from, const std::string& to) {
    if (from != to) out.push_back(fmt::format("{}: {} -> {}", what, from, to));
  };
  diff("name", b.name().empty() ? "unset" : b.name(), after.name().empty() ? "unset" : after.name());
  diff("default_model_filename", b.default_model_filename().empty() ? "unset" : b.default_model_filename(),
       after.default_model_filename().empty() ? "unset" : after.default_model_filename());
  diff("version_policy", b.has_version_policy() ? "set" : "unset", after.has_version_policy() ? "set" : "unset");
  diff("max_batch_size", std::to_string(b.max_batch_size()), std::to_string(after.max_batch_size()));
  diff("dynamic_batching.preferred_batch_size",
       b.has_dynamic_batching() ? Dims(b.dynamic_batching().preferred_batch_size()) : "unset",
       after.has_dynamic_batching() ? Dims(after.dynamic_batching().preferred_batch_size()) : "unset");
  diff("dynamic_batching.max_queue_delay_microseconds",
       b.has_dynamic_batching() ? std::to_string(b.dynamic_batching().max_queue_delay_microseconds()) : "unset",
       after.has_dynamic_batching() ? std::to_string(after.dynamic_batching().max_queue_delay_microseconds()) : "unset");
  diff("instance_group", GroupText(b), GroupText(after));
  for (const char* key : {"prefer_nhwc", "enable_cuda_graph", "cudnn_conv_algo_search"}) {
    diff(fmt::format("cuda accelerator {}", key), CudaParameter(b, key), CudaParameter(after, key));
  }
  for (const char* key : {"precision", "pad_to_preferred_batch_size", "workers_per_instance"}) {
    diff(fmt::format("parameters {}", key), ModelParameter(b, key), ModelParameter(after, key));
  }
  return out;
}

std::string TunedFolderConfig(const TuneInput& input, const ServedCandidate& winner, ConfigWriterOptions writer,
                              std::vector<std::string>* changes) {
  writer.base = OutputBase(input);
  const std::vector<std::string> changed = DescribeChanges(input.base, TunedModelConfig(winner, writer));
  if (input.base) {
    writer.comments.push_back(fmt::format("Tuned from {}: what tune searched is set below, everything else it "
                                          "says is kept as written.",
                                          input.config_path));
    writer.comments.push_back(changed.empty() ? std::string("tune changed nothing: it already was the winner")
                                              : fmt::format("tune changed {} field(s):", changed.size()));
    for (const std::string& c : changed) writer.comments.push_back("  " + c);
  }
  if (changes != nullptr) *changes = changed;
  return TunedConfigPbtxt(winner, writer);
}

Status WriteTunedFolder(const TuneInput& input, const std::string& config_pbtxt) {
  if (!input.in_place) return WriteModelFolder(input.output_dir, input.model_file, config_pbtxt);
  std::error_code ec;
  const fs::path config = fs::path(input.output_dir) / "config.pbtxt";
  if (fs::exists(config, ec)) {
    fs::copy_file(config, fs::path(input.output_dir) / "config.pbtxt.before-tune", fs::copy_options::overwrite_existing,
                  ec);
    if (ec) return InvalidArgument("cannot keep a copy of " + config.string() + " before replacing it: " + ec.message());
  }
  std::ofstream out(config, std::ios::binary | std::ios::trunc);
  out << config_pbtxt;
  out.close();
  if (!out) return InvalidArgument("cannot write " + config.string());
  return Status::Ok();
}

}  // namespace ortgpu::tune
