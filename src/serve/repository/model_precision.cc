#include "serve/repository/model_precision.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "onnx.pb.h"
#include "ort/runtime.h"
#include "precision/block_list.h"
#include "precision/model_cache.h"
#include "precision/model_file.h"
#include "precision/precision.h"

namespace ortgpu::serve {
namespace {

namespace fs = std::filesystem;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A converted model written outside the cache (the cache folder could not be
// written): a private temporary folder, removed when the version unloads.
struct ScratchModel {
  fs::path dir;
  ~ScratchModel() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Expected<std::shared_ptr<ScratchModel>> WriteScratch(::onnx::ModelProto& model) {
  static std::atomic<int> counter{0};
  auto scratch = std::make_shared<ScratchModel>();
  std::error_code ec;
  scratch->dir = fs::temp_directory_path(ec) /
                 fmt::format("ortgpu-converted-{}-{}", ::getpid(), counter.fetch_add(1));
  fs::create_directories(scratch->dir, ec);
  if (ec) return Unavailable("cannot make a temporary folder for the converted model: " + ec.message());
  ORTGPU_RETURN_IF_ERROR(precision::WriteModelFile(model, (scratch->dir / "model.onnx").string()).status());
  return scratch;
}

// The outputs the reference run gave, returned to ConvertPrecision, which
// asks for them once: the inputs were chosen by running it already.
class RecordedRunner : public precision::ModelRunner {
 public:
  explicit RecordedRunner(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto&, const std::vector<Tensor>&) override { return outputs_; }

 private:
  std::vector<Tensor> outputs_;
};

struct ChosenInputs {
  const std::vector<Tensor>* inputs = nullptr;  // null: none ran
  std::vector<Tensor> reference;                // the float32 model's outputs on them
  std::string last_failure;
};

// The first choice the float32 model runs, with its outputs.
ChosenInputs ChooseInputs(const ::onnx::ModelProto& fp32, const std::vector<std::vector<Tensor>>& choices,
                          precision::ModelRunner& reference) {
  ChosenInputs out;
  for (const auto& c : choices) {
    auto outputs = reference.Run(fp32, c);
    if (outputs.ok()) {
      out.inputs = &c;
      out.reference = std::move(outputs).value();
      return out;
    }
    out.last_failure = outputs.status().message();
  }
  return out;
}

std::string InputsDigest(const std::vector<std::vector<Tensor>>& choices) {
  precision::ContentDigest d;
  for (const auto& c : choices) {
    d.Add("|");
    for (const Tensor& t : c) {
      d.Add(fmt::format("{}:{}:{};", t.name, static_cast<int>(t.dtype), fmt::join(t.shape, "x")));
      d.Add(std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
      for (const auto& s : t.strings) d.Add(s);
    }
  }
  return d.Hex();
}

// What the key of a conversion covers besides the model's bytes.
std::string ConversionSettings(const PrecisionRequest& r) {
  const auto& b = r.settings.budget;
  std::vector<std::string> nodes;
  for (const auto& [name, reason] : r.settings.node_block_list) nodes.push_back(name);
  return fmt::format("converter={};ort={};target={};io={};ops={};nodes={};budget={},{},{},{};provider={}",
                     precision::kConverterVersion, Runtime::Get().Version(), PrecisionName(r.settings.precision),
                     r.settings.fp16_io ? "fp16" : "fp32", fmt::join(r.settings.op_block_list, ","),
                     fmt::join(nodes, ","),
                     b.min_cosine, b.min_top1, b.max_rel_error, b.allow_nonfinite,
                     ProviderName(r.session.provider));
}

void FillFigures(const DeviationReport& deviation, PrecisionOutcome& o) {
  o.checked = true;
  o.min_cosine = 1;
  o.max_rel_error = 0;
  o.top1 = 1;
  for (const auto& d : deviation.outputs) {
    if (!d.compared) continue;
    o.min_cosine = std::min(o.min_cosine, d.cosine_min);
    o.max_rel_error = std::max(o.max_rel_error, d.max_rel_error);
    if (d.classifier) {
      o.has_top1 = true;
      o.top1 = std::min(o.top1, d.top1_agreement);
    }
  }
}

nlohmann::json FiguresJson(const PrecisionOutcome& o, const std::string& inputs_digest) {
  return {{"checked", o.checked},       {"inputs_digest", inputs_digest}, {"min_cosine", o.min_cosine},
          {"max_rel_error", o.max_rel_error}, {"has_top1", o.has_top1},   {"top1", o.top1},
          {"violations", o.violations}, {"note", o.note}};
}

// The figures of an earlier load on the same inputs, when the record has them.
bool ReuseFigures(const nlohmann::json& r, const std::string& inputs_digest, PrecisionOutcome& o) {
  if (!r.value("checked", false) || r.value("inputs_digest", "") != inputs_digest) return false;
  try {
    o.checked = true;
    o.reused_figures = true;
    o.min_cosine = r.at("min_cosine").get<double>();
    o.max_rel_error = r.at("max_rel_error").get<double>();
    o.has_top1 = r.at("has_top1").get<bool>();
    o.top1 = r.at("top1").get<double>();
    o.violations = r.at("violations").get<std::vector<std::string>>();
    return true;
  } catch (const nlohmann::json::exception&) {
    PrecisionOutcome fresh;
    fresh.precision = o.precision;
    fresh.converted = o.converted;
    fresh.from_cache = o.from_cache;
    fresh.cache = o.cache;
    o = fresh;
    return false;
  }
}

// Judges `converted` (read from the cache) against the float32 model.
Status CheckCached(const PrecisionRequest& r, const std::string& converted_path, const PrecisionEngine& engine,
                   PrecisionOutcome& o) {
  ORTGPU_ASSIGN_OR_RETURN(auto fp32, precision::ReadModelFile(r.model_path));
  ORTGPU_ASSIGN_OR_RETURN(auto converted, precision::ReadModelFile(converted_path));
  precision::InterfaceCastingRunner reference(*engine.reference), candidate(*engine.candidate);
  ChosenInputs chosen = ChooseInputs(fp32, r.input_choices, reference);
  if (chosen.inputs == nullptr) {
    o.note = "accuracy not checked: no warm-up input ran the float32 model";
    return Status::Ok();
  }
  ORTGPU_ASSIGN_OR_RETURN(auto outputs, candidate.Run(converted, *chosen.inputs));
  const DeviationReport deviation = CompareDeviation(outputs, chosen.reference);
  FillFigures(deviation, o);
  o.violations = BudgetViolations(deviation, r.settings.budget);
  return Status::Ok();
}

struct Converted {
  ::onnx::ModelProto model;
  bool already_fp16 = false;
};

Expected<Converted> Convert(const PrecisionRequest& r, const PrecisionEngine& engine, PrecisionOutcome& o) {
  ORTGPU_ASSIGN_OR_RETURN(auto fp32, precision::ReadModelFile(r.model_path));
  precision::PrecisionOptions options;
  options.target = r.settings.precision == ServedPrecision::kMixed ? precision::Target::kMixed : precision::Target::kFp16;
  options.convert.keep_io_types = !r.settings.fp16_io;
  options.convert.op_block_list = r.settings.op_block_list;
  options.convert.node_block_list = r.settings.node_block_list;
  options.budget = r.settings.budget;
  // As convert and bench do: attention and layer normalisation fused on
  // CUDA, kept only when the fused model runs within the budget.
  options.fuse = r.session.provider == Provider::kCuda;
  precision::InterfaceCastingRunner reference(*engine.reference), candidate(*engine.candidate);
  const bool check = r.settings.check != PrecisionCheck::kOff || options.target == precision::Target::kMixed;
  ChosenInputs chosen;
  if (check || engine.placement != nullptr) chosen = ChooseInputs(fp32, r.input_choices, reference);
  RecordedRunner recorded(chosen.reference);
  precision::PrecisionSeams seams;
  if (chosen.inputs != nullptr) {
    if (check) {
      seams.reference = &recorded;
      seams.candidate = &candidate;
    }
    seams.placement = engine.placement.get();
  } else if (options.target == precision::Target::kMixed) {
    return FailedPrecondition(
        "precision mixed searches by the accuracy check, and no warm-up input ran the float32 model" +
        (chosen.last_failure.empty() ? std::string() : " (" + chosen.last_failure + ")") +
        "; add a model_warmup with inputs the model accepts, or use precision fp16");
  } else if (check) {
    o.note = "accuracy not checked: no warm-up input ran the float32 model";
  }
  const std::vector<Tensor> none;
  ORTGPU_ASSIGN_OR_RETURN(auto result, precision::ConvertPrecision(std::move(fp32), chosen.inputs ? *chosen.inputs : none,
                                                                   options, seams));
  if (result.report.already_fp16) return Converted{std::move(result.model), true};
  o.converted = true;
  if (result.checked) {
    FillFigures(result.deviation, o);
    o.violations = result.violations;
  }
  return Converted{std::move(result.model), false};
}

std::string Percent(double share) { return fmt::format("{:.3g}%", share * 100); }

}  // namespace

Expected<PrecisionSettings> ParsePrecisionSettings(const std::map<std::string, std::string>& params) {
  PrecisionSettings s;
  if (auto it = params.find("precision"); it != params.end()) {
    const std::string v = Lower(it->second);
    if (v == "fp32" || v == "float32") {
      s.precision = ServedPrecision::kFp32;
    } else if (v == "tf32") {
      s.precision = ServedPrecision::kTf32;
    } else if (v == "fp16" || v == "float16") {
      s.precision = ServedPrecision::kFp16;
    } else if (v == "mixed") {
      s.precision = ServedPrecision::kMixed;
    } else {
      return InvalidArgument("parameter precision is '" + it->second +
                             "'; it must be fp32 (true float32, TF32 off), tf32, fp16 or mixed (float16 with the "
                             "nodes that break the accuracy budget kept in float32)");
    }
  }
  if (auto it = params.find("precision_budget"); it != params.end()) {
    auto budget = ParsePrecisionBudget(it->second);
    if (!budget.ok()) return budget.status().WithContext("parameter precision_budget");
    s.budget = *budget;
  }
  if (auto it = params.find("precision_check"); it != params.end()) {
    const std::string v = Lower(it->second);
    if (v == "enforce") {
      s.check = PrecisionCheck::kEnforce;
    } else if (v == "warn") {
      s.check = PrecisionCheck::kWarn;
    } else if (v == "off") {
      s.check = PrecisionCheck::kOff;
    } else {
      return InvalidArgument("parameter precision_check is '" + it->second +
                             "'; it must be enforce (out of the accuracy budget: UNAVAILABLE), warn (serve it "
                             "and say so) or off (no check)");
    }
  }
  if (auto it = params.find("precision_io"); it != params.end()) {
    const std::string v = Lower(it->second);
    if (v != "fp16" && v != "fp32") {
      return InvalidArgument("parameter precision_io is '" + it->second +
                             "'; it must be fp32 (float32 inputs and outputs, the default) or fp16");
    }
    s.fp16_io = v == "fp16";
    if (s.fp16_io && !s.converts()) {
      return InvalidArgument("parameter precision_io is fp16 but precision is not fp16 or mixed; set precision "
                             "fp16 (or mixed) to convert the model, or drop precision_io");
    }
  }
  for (const char* key : {"precision_op_block_list", "precision_node_block_list"}) {
    const auto it = params.find(key);
    if (it == params.end()) continue;
    if (!s.converts()) {
      return InvalidArgument(std::string("parameter ") + key + " is set but precision is not fp16 or mixed; set "
                             "precision fp16 (or mixed) to convert the model, or drop " + key);
    }
    if (std::string_view(key) == "precision_op_block_list") {
      s.op_block_list = precision::ParseOpBlockList({it->second});
    } else {
      s.node_block_list = precision::ParseNodeBlockList({it->second}, "named in precision_node_block_list");
    }
  }
  return s;
}

std::string_view PrecisionName(ServedPrecision p) {
  switch (p) {
    case ServedPrecision::kFp32: return "fp32";
    case ServedPrecision::kTf32: return "tf32";
    case ServedPrecision::kFp16: return "fp16";
    case ServedPrecision::kMixed: return "mixed";
    case ServedPrecision::kDefault: break;
  }
  return "";
}

void ApplyPrecision(const PrecisionSettings& settings, SessionOptions& options) {
  if (settings.precision == ServedPrecision::kFp32) options.cuda_options["use_tf32"] = "0";
  if (settings.precision == ServedPrecision::kTf32) options.cuda_options["use_tf32"] = "1";
}

std::string PrecisionOutcome::Describe() const {
  std::string out = precision;
  if (already_fp16) return out + " (the model is float16 already; served as it is)";
  if (converted) out += from_cache ? " (converted, from the model cache)" : " (converted at load)";
  if (!checked) return out + (note.empty() ? "" : ": " + note);
  out += fmt::format(": min cosine {:.6g}, max rel err {}", min_cosine, Percent(max_rel_error));
  if (has_top1) out += ", top-1 " + Percent(top1);
  out += within_budget() ? ", within budget" : ", OUTSIDE the budget (" + violations.front() + ")";
  if (!note.empty()) out += "; " + note;
  return out;
}

std::string PrecisionOutcome::AccuracyText() const {
  if (!checked) return note.empty() ? "not checked" : note;
  std::string out = fmt::format("min_cosine={:.6g},max_rel_error={:.4g}", min_cosine, max_rel_error);
  if (has_top1) out += fmt::format(",top1={:.4g}", top1);
  return out + (within_budget() ? ",within_budget=true" : ",within_budget=false");
}

PrecisionFigures PrecisionFiguresOf(const PrecisionOutcome& o) {
  PrecisionFigures f;
  f.precision = o.precision;
  f.checked = o.checked;
  f.min_cosine = o.min_cosine;
  f.max_rel_error = o.max_rel_error;
  f.top1 = o.top1;
  f.within_budget = o.within_budget();
  return f;
}

PrecisionEngineFactory RealPrecisionEngineFactory() {
  return [](const SessionOptions& options) {
    PrecisionEngine e;
    e.reference = std::make_unique<precision::OrtModelRunner>(precision::Float32Reference(options));
    e.candidate = std::make_unique<precision::OrtModelRunner>(options);
    if (options.provider == Provider::kCuda) e.placement = std::make_unique<precision::OrtPlacementObserver>(options);
    return e;
  };
}

Expected<PreparedModel> PrepareModelPrecision(const PrecisionRequest& r, const PrecisionEngineFactory& engines) {
  PreparedModel out;
  out.path = r.model_path;
  out.outcome.precision = std::string(PrecisionName(r.settings.precision));
  if (!r.settings.converts()) return out;
  PrecisionOutcome& o = out.outcome;
  ORTGPU_ASSIGN_OR_RETURN(const std::string model_digest, precision::ModelFileDigest(r.model_path));
  precision::ContentDigest key_digest;
  key_digest.Add(model_digest);
  key_digest.Add(ConversionSettings(r));
  const std::string key = key_digest.Hex();
  const std::string inputs_digest = InputsDigest(r.input_choices);
  const PrecisionEngine engine = engines(r.session);
  std::optional<precision::ModelCache> cache;
  if (!r.cache_dir.empty()) cache.emplace(r.cache_dir);
  if (auto hit = cache ? cache->Find(key) : std::nullopt) {
    out.path = hit->model_path;
    o.converted = true;
    o.from_cache = true;
    o.cache = "hit";
    if (r.settings.check != PrecisionCheck::kOff && !ReuseFigures(hit->record, inputs_digest, o)) {
      ORTGPU_RETURN_IF_ERROR(CheckCached(r, hit->model_path, engine, o));
    }
  } else {
    ORTGPU_ASSIGN_OR_RETURN(Converted converted, Convert(r, engine, o));
    if (converted.already_fp16) {
      o.already_fp16 = true;
      o.cache = "float16 already";
      return out;
    }
    nlohmann::json record = FiguresJson(o, o.checked ? inputs_digest : "");
    record["settings"] = ConversionSettings(r);
    Expected<precision::CachedModel> stored = cache ? cache->Store(key, converted.model, record)
                                                    : Expected<precision::CachedModel>(Unavailable("no cache folder"));
    if (stored.ok()) {
      out.path = stored->model_path;
      o.cache = "stored";
    } else {
      o.cache = cache ? "not written" : "off";
      if (cache) {
        spdlog::warn("the model cache could not be written ({}); the converted model is kept in a temporary folder "
                     "until the version unloads, and the next load converts again",
                     stored.status().message());
        o.note = "not cached (the model cache folder could not be written; see the server log)";
      }
      ORTGPU_ASSIGN_OR_RETURN(auto scratch, WriteScratch(converted.model));
      out.path = (scratch->dir / "model.onnx").string();
      out.scratch = std::move(scratch);
    }
  }
  if (o.checked && !o.within_budget() && r.settings.check == PrecisionCheck::kEnforce) {
    std::string message =
        fmt::format("precision {}: the converted model is outside the accuracy budget on the warm-up inputs ({}); "
                    "measured against float32: {} (budget: {}). ",
                    o.precision, fmt::join(o.violations, "; "), o.AccuracyText(), DescribeBudget(r.settings.budget));
    message += r.settings.precision == ServedPrecision::kFp16
                   ? "Use precision mixed (keeps the nodes responsible in float32), loosen precision_budget, or set "
                     "precision_check warn to serve it anyway"
                   : "Loosen precision_budget, or set precision_check warn to serve it anyway";
    return FailedPrecondition(message);
  }
  return out;
}

}  // namespace ortgpu::serve
