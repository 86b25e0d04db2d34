#include "serve/repository/model_config.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

namespace ortgpu::serve {
namespace {

// Collects the text-format parser's errors and warnings with 1-based line
// numbers (protobuf counts from 0).
class CollectingErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectingErrors(std::string label) : label_(std::move(label)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    errors.push_back(Where(line, column) + message);
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    warnings.push_back(Where(line, column) + message + " (ignored)");
  }
  std::vector<std::string> errors;
  std::vector<std::string> warnings;

 private:
  std::string Where(int line, int column) const {
    return label_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
  }
  std::string label_;
};

const std::set<std::string>& HonouredTopLevel() {
  static const std::set<std::string> kFields = {
      "name",         "platform",       "backend",        "max_batch_size", "input",
      "output",       "instance_group", "dynamic_batching", "version_policy", "model_warmup",
      "parameters",   "optimization",   "default_model_filename"};
  return kFields;
}

// Fields of `m` that are set; `honoured` lists the ones ortgpu acts on.
void WarnUnhonoured(const google::protobuf::Message& m, const std::string& prefix, const std::set<std::string>& honoured,
                    std::vector<std::string>& out) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  m.GetReflection()->ListFields(m, &fields);
  for (const auto* f : fields) {
    if (honoured.count(f->name()) == 0) {
      out.push_back("field '" + prefix + f->name() + "' is not honoured by ortgpu and is ignored (see docs/SERVING.md)");
    }
  }
}

bool AllVariableFirstDim(const std::vector<TensorInfo>& tensors) {
  if (tensors.empty()) return false;
  for (const auto& t : tensors) {
    if (t.shape.empty() || t.shape[0] >= 0) return false;
  }
  return true;
}

std::string DimsText(const google::protobuf::RepeatedField<int64_t>& dims) {
  return ShapeToString(std::vector<int64_t>(dims.begin(), dims.end()));
}

// Checks (and for an incomplete entry fills) one configured tensor against
// the model's tensor of the same name.
template <typename ConfigTensor>
Status MatchTensor(const TensorInfo& model, int max_batch_size, const std::string& kind, ConfigTensor& c) {
  if (!model.is_tensor) {
    return Unimplemented(kind + " '" + model.name + "' is a " + model.type_text +
                         "; ortgpu serves tensor inputs and outputs only");
  }
  const inference::DataType want = ToConfigType(model.dtype);
  if (c.data_type() == inference::TYPE_INVALID) {
    c.set_data_type(want);
  } else if (c.data_type() != want) {
    return InvalidArgument("config.pbtxt gives " + kind + " '" + c.name() + "' data_type " +
                           inference::DataType_Name(c.data_type()) + " but the model has " +
                           inference::DataType_Name(want) + "; change data_type to " + inference::DataType_Name(want));
  }
  std::vector<int64_t> shape = model.shape;
  if (max_batch_size > 0) {
    if (shape.empty() || shape[0] >= 0) {
      return InvalidArgument("max_batch_size is " + std::to_string(max_batch_size) + " but " + kind + " '" +
                             model.name + "' of the model has shape " + ShapeToString(model.shape) +
                             " without a variable batch dimension; set max_batch_size: 0 in config.pbtxt");
    }
    shape.erase(shape.begin());
  }
  if (c.dims_size() == 0 && !c.has_reshape()) {
    for (int64_t d : shape) c.add_dims(d < 0 ? -1 : d);
    return Status::Ok();
  }
  // With a reshape the model's shape is the reshape's, not the dims'.
  if (c.has_reshape()) return Status::Ok();
  if (static_cast<size_t>(c.dims_size()) != shape.size()) {
    return InvalidArgument("config.pbtxt gives " + kind + " '" + c.name() + "' dims " + DimsText(c.dims()) +
                           " but the model's shape" + (max_batch_size > 0 ? " without the batch dimension" : "") +
                           " is " + ShapeToString(shape) + "; fix dims or add a reshape");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] >= 0 && c.dims(d) >= 0 && shape[d] != c.dims(d)) {
      return InvalidArgument("config.pbtxt gives " + kind + " '" + c.name() + "' dims " + DimsText(c.dims()) +
                             " but the model's shape is " + ShapeToString(shape) + " (dimension " +
                             std::to_string(d) + " differs)");
    }
  }
  return Status::Ok();
}

template <typename ConfigTensor, typename Repeated>
Status CompleteTensors(const std::vector<TensorInfo>& model, int max_batch_size, const std::string& kind,
                       Repeated& configured) {
  for (auto& c : configured) {
    auto it = std::find_if(model.begin(), model.end(), [&](const TensorInfo& t) { return t.name == c.name(); });
    if (it == model.end()) {
      std::string names;
      for (const auto& t : model) names += (names.empty() ? "" : ", ") + t.name;
      return InvalidArgument("config.pbtxt names " + kind + " '" + c.name() + "' but the model has no such " + kind +
                             "; its " + kind + "s are: " + names);
    }
    ORTGPU_RETURN_IF_ERROR(MatchTensor(*it, max_batch_size, kind, c));
  }
  for (const auto& t : model) {
    const bool listed =
        std::any_of(configured.begin(), configured.end(), [&](const ConfigTensor& c) { return c.name() == t.name; });
    if (listed) continue;
    ConfigTensor c;
    c.set_name(t.name);
    ORTGPU_RETURN_IF_ERROR(MatchTensor(t, max_batch_size, kind, c));
    *configured.Add() = std::move(c);
  }
  return Status::Ok();
}

}  // namespace

Expected<ParsedConfig> ParseModelConfig(std::string_view text, const std::string& label) {
  ParsedConfig out;
  CollectingErrors errors(label);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  const bool ok = parser.ParseFromString(std::string(text), &out.config);
  if (!ok || !errors.errors.empty()) {
    std::string msg = errors.errors.empty() ? label + ": not valid protobuf text format" : errors.errors.front();
    return InvalidArgument(msg + "; the model is not loaded until config.pbtxt parses (Triton's model configuration "
                                 "format, see docs/SERVING.md)");
  }
  out.warnings = std::move(errors.warnings);
  for (auto& w : UnhonouredFieldWarnings(out.config)) out.warnings.push_back(label + ": " + w);
  return out;
}

std::vector<std::string> UnhonouredFieldWarnings(const inference::ModelConfig& config) {
  std::vector<std::string> out;
  WarnUnhonoured(config, "", HonouredTopLevel(), out);
  if (config.has_dynamic_batching()) {
    WarnUnhonoured(config.dynamic_batching(), "dynamic_batching.",
                   {"preferred_batch_size", "max_queue_delay_microseconds", "default_queue_policy"}, out);
    WarnUnhonoured(config.dynamic_batching().default_queue_policy(), "dynamic_batching.default_queue_policy.",
                   {"max_queue_size"}, out);
  }
  if (config.has_optimization()) {
    WarnUnhonoured(config.optimization(), "optimization.", {"execution_accelerators", "graph"}, out);
    WarnUnhonoured(config.optimization().graph(), "optimization.graph.", {"level"}, out);
    const auto& acc = config.optimization().execution_accelerators();
    WarnUnhonoured(acc, "optimization.execution_accelerators.", {"gpu_execution_accelerator"}, out);
    for (const auto& a : acc.gpu_execution_accelerator()) {
      if (a.name() != "cuda") {
        out.push_back("gpu_execution_accelerator '" + a.name() +
                      "' is not supported by ortgpu (only \"cuda\") and is ignored");
      }
    }
  }
  for (const auto& g : config.instance_group()) {
    WarnUnhonoured(g, "instance_group.", {"name", "kind", "count", "gpus"}, out);
  }
  for (const auto& in : config.input()) {
    WarnUnhonoured(in, "input.", {"name", "data_type", "dims", "reshape", "format"}, out);
  }
  for (const auto& o : config.output()) {
    WarnUnhonoured(o, "output.", {"name", "data_type", "dims", "reshape"}, out);
  }
  if (ParameterIsTrue(ConfigParameters(config)["pad_to_preferred_batch_size"]) &&
      (config.max_batch_size() <= 0 || !config.has_dynamic_batching())) {
    out.push_back("parameter 'pad_to_preferred_batch_size' pads the batches of the dynamic batcher, so it needs "
                  "max_batch_size > 0 and dynamic_batching; it is ignored here");
  }
  if (!config.platform().empty() && config.platform() != "onnxruntime_onnx") {
    out.push_back("platform '" + config.platform() + "' is not onnxruntime_onnx; ortgpu serves it with ONNX Runtime");
  }
  if (!config.backend().empty() && config.backend() != "onnxruntime") {
    out.push_back("backend '" + config.backend() + "' is not onnxruntime; ortgpu serves it with ONNX Runtime");
  }
  return out;
}

bool SetsMaxBatchSize(std::string_view config_text) {
  size_t pos = 0;
  while ((pos = config_text.find("max_batch_size", pos)) != std::string_view::npos) {
    // Only at the start of a field: after a line start, whitespace, '{' or ';'.
    size_t before = pos;
    while (before > 0 && (config_text[before - 1] == ' ' || config_text[before - 1] == '\t')) --before;
    const bool field_start = before == 0 || config_text[before - 1] == '\n' || config_text[before - 1] == '{' ||
                             config_text[before - 1] == ';' || config_text[before - 1] == '}';
    size_t after = pos + std::string_view("max_batch_size").size();
    while (after < config_text.size() && (config_text[after] == ' ' || config_text[after] == '\t')) ++after;
    if (field_start && after < config_text.size() && config_text[after] == ':') return true;
    pos += 1;
  }
  return false;
}

namespace {

// Whether every dims the config gives for `configured` leaves out a batch
// dimension of the model's tensor (dims one shorter than the model's rank).
template <typename Repeated>
bool DimsLeaveOutBatch(const Repeated& configured, const std::vector<TensorInfo>& model) {
  for (const auto& c : configured) {
    if (c.dims_size() == 0 || c.has_reshape()) continue;
    auto it = std::find_if(model.begin(), model.end(), [&](const TensorInfo& t) { return t.name == c.name(); });
    if (it == model.end() || static_cast<size_t>(c.dims_size()) + 1 != it->shape.size()) return false;
  }
  return true;
}

template <typename Repeated>
std::vector<std::string> Unlisted(const std::vector<TensorInfo>& model, const Repeated& configured) {
  std::vector<std::string> out;
  for (const auto& t : model) {
    if (std::none_of(configured.begin(), configured.end(), [&](const auto& c) { return c.name() == t.name; })) {
      out.push_back(t.name);
    }
  }
  return out;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Status CompleteConfig(const std::vector<TensorInfo>& model_inputs, const std::vector<TensorInfo>& model_outputs,
                      ConfigGiven given, const CompletionOptions& options, inference::ModelConfig& config,
                      std::vector<std::string>* completed) {
  if (config.max_batch_size() < 0) {
    return InvalidArgument("max_batch_size is " + std::to_string(config.max_batch_size()) +
                           "; it must be 0 (no batching) or the largest batch the model accepts");
  }
  std::vector<std::string> filled;
  if (!given.max_batch_size && config.max_batch_size() == 0 && AllVariableFirstDim(model_inputs) &&
      AllVariableFirstDim(model_outputs) && DimsLeaveOutBatch(config.input(), model_inputs) &&
      DimsLeaveOutBatch(config.output(), model_outputs) && options.default_max_batch_size > 0) {
    // Large enough for the preferred batch sizes the config asks for.
    int mbs = options.default_max_batch_size;
    for (int b : config.dynamic_batching().preferred_batch_size()) mbs = std::max(mbs, b);
    config.set_max_batch_size(mbs);
    const bool add_batcher = !config.has_dynamic_batching();
    if (add_batcher) config.mutable_dynamic_batching();
    filled.push_back("max_batch_size " + std::to_string(mbs) +
                     (add_batcher ? " with dynamic_batching" : ""));
  }
  if (config.platform().empty() && config.backend().empty()) config.set_platform("onnxruntime_onnx");
  const auto inputs = Unlisted(model_inputs, config.input());
  const auto outputs = Unlisted(model_outputs, config.output());
  ORTGPU_RETURN_IF_ERROR(
      CompleteTensors<inference::ModelInput>(model_inputs, config.max_batch_size(), "input", *config.mutable_input()));
  ORTGPU_RETURN_IF_ERROR(CompleteTensors<inference::ModelOutput>(model_outputs, config.max_batch_size(), "output",
                                                                 *config.mutable_output()));
  if (!inputs.empty()) filled.push_back((inputs.size() == 1 ? "input " : "inputs ") + Joined(inputs));
  if (!outputs.empty()) filled.push_back((outputs.size() == 1 ? "output " : "outputs ") + Joined(outputs));
  for (int b : config.dynamic_batching().preferred_batch_size()) {
    if (b < 1 || (config.max_batch_size() > 0 && b > config.max_batch_size())) {
      return InvalidArgument("dynamic_batching.preferred_batch_size " + std::to_string(b) +
                             " is outside 1.." + std::to_string(config.max_batch_size()) +
                             " (max_batch_size); remove it or raise max_batch_size");
    }
  }
  if (completed != nullptr) *completed = std::move(filled);
  return Status::Ok();
}

DataType FromConfigType(inference::DataType t) {
  auto d = DataTypeFromTritonConfig(inference::DataType_Name(t));
  return d.value_or(DataType::kUndefined);
}

inference::DataType ToConfigType(DataType t) {
  inference::DataType out = inference::TYPE_INVALID;
  inference::DataType_Parse(std::string(TritonConfigName(t)), &out);
  return out;
}

std::string CudaGraphRequest(const inference::ModelConfig& config) {
  std::string where;
  if (config.optimization().cuda().graphs()) where = "optimization { cuda { graphs: true } }";
  for (const auto& a : config.optimization().execution_accelerators().gpu_execution_accelerator()) {
    auto it = a.parameters().find("enable_cuda_graph");
    if (a.name() == "cuda" && it != a.parameters().end() && ParameterIsTrue(it->second)) {
      where = "the cuda accelerator parameter enable_cuda_graph";
    }
  }
  if (ParameterIsTrue(ConfigParameters(config)["enable_cuda_graph"])) where = "parameter enable_cuda_graph";
  return where;
}

Expected<OptimizationLevel> GraphOptimizationLevel(const inference::ModelConfig& config) {
  switch (config.optimization().graph().level()) {
    case 0: return OptimizationLevel::kAll;
    case -1: return OptimizationLevel::kBasic;
    case 1: return OptimizationLevel::kExtended;
    case 2: return OptimizationLevel::kDisable;
    default:
      return InvalidArgument("optimization { graph { level: " + std::to_string(config.optimization().graph().level()) +
                             " } } is not a level Triton's ONNX Runtime backend knows; use -1 (basic), 1 (extended), "
                             "2 (none) or leave it out (all)");
  }
}

std::map<std::string, std::string> ConfigParameters(const inference::ModelConfig& config) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : config.parameters()) out[k] = v.string_value();
  return out;
}

bool ParameterIsTrue(const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "true" || v == "1" || v == "yes";
}

}  // namespace ortgpu::serve
