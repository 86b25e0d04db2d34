#include "precision/precision.h"

#include <fmt/format.h>

namespace ortgpu::precision {

Expected<Target> ParseTarget(std::string_view text) {
  if (text == "fp16" || text == "float16") return Target::kFp16;
  if (text == "mixed") return Target::kMixed;
  return InvalidArgument(fmt::format("--to {}: expected fp16 or mixed", text));
}

std::string_view TargetName(Target t) { return t == Target::kFp16 ? "fp16" : "mixed"; }

namespace {

// Converts until ORT places no converted node off the target provider that
// it kept on it in float32 (bounded by `rounds`); those nodes go back to
// float32. Returns the options the rest of the pipeline converts with.
Expected<ConvertOptions> AvoidNewFallbacks(const ::onnx::ModelProto& fp32, const std::vector<Tensor>& inputs,
                                           ConvertOptions options, int rounds, PlacementObserver& placement,
                                           std::vector<KeptNode>& kept) {
  ORTGPU_ASSIGN_OR_RETURN(auto baseline, placement.OffTargetNodes(fp32, inputs));
  std::map<std::string, std::string> op_of;
  for (const auto& n : fp32.graph().node()) op_of[n.name()] = n.op_type();
  for (int round = 0; round < rounds; ++round) {
    ::onnx::ModelProto model = fp32;
    ORTGPU_ASSIGN_OR_RETURN(auto report, ConvertToFloat16(model, options));
    if (report.already_fp16) break;
    ORTGPU_ASSIGN_OR_RETURN(auto off, placement.OffTargetNodes(model, inputs));
    bool added = false;
    for (const auto& name : report.converted) {
      if (!off.count(name) || baseline.count(name)) continue;
      const std::string reason =
          "ORT places it on the CPU in float16 but not in float32 (no float16 kernel on the target provider): "
          "kept float32, so the conversion adds no CPU fallback or copy";
      options.node_block_list[name] = reason;
      kept.push_back({name, op_of[name], reason});
      added = true;
    }
    if (!added) break;
  }
  return options;
}


// The pipeline on `fp32` (fused or not); the reference runs `original`, or
// `fp32` itself when null (no copy of a model that can be gigabytes).
Expected<PrecisionResult> Convert(::onnx::ModelProto fp32, const ::onnx::ModelProto* original,
                                  const std::vector<Tensor>& inputs, const PrecisionOptions& options,
                                  const PrecisionSeams& seams) {
  PrecisionResult result;
  ConvertOptions convert = options.convert;
  if (options.target == Target::kMixed && (seams.reference == nullptr || seams.candidate == nullptr)) {
    return InvalidArgument("--to mixed needs the accuracy check (it searches by it); drop --no-check");
  }
  if (std::string message = AlreadyFloat16(fp32); !message.empty()) {
    // Left alone before anything runs.
    result.model = std::move(fp32);
    result.report.already_fp16 = true;
    result.report.message = std::move(message);
    return result;
  }
  if (seams.placement != nullptr) {
    ORTGPU_ASSIGN_OR_RETURN(convert, AvoidNewFallbacks(fp32, inputs, convert, options.placement_rounds,
                                                       *seams.placement, result.kept_for_placement));
  }
  if (seams.reference == nullptr || seams.candidate == nullptr) {
    result.model = std::move(fp32);
    ORTGPU_ASSIGN_OR_RETURN(result.report, ConvertToFloat16(result.model, convert));
    return result;
  }
  ORTGPU_ASSIGN_OR_RETURN(auto reference, seams.reference->Run(original != nullptr ? *original : fp32, inputs));
  result.checked = true;
  Evaluation final;
  if (options.target == Target::kMixed) {
    MixedSearchOptions search;
    search.budget = options.budget;
    search.max_evaluations = options.max_evaluations;
    ORTGPU_ASSIGN_OR_RETURN(auto mixed, SearchMixedPrecision(fp32, convert, inputs, reference, *seams.candidate, search));
    final = std::move(mixed.final);
    result.kept_for_accuracy = std::move(mixed.kept_for_accuracy);
    result.fp16_violations = std::move(mixed.fp16_violations);
    result.evaluations = mixed.evaluations;
    result.note = mixed.note;
  } else {
    ORTGPU_ASSIGN_OR_RETURN(final, Evaluate(fp32, convert, inputs, reference, *seams.candidate, options.budget));
  }
  result.model = std::move(final.model);
  result.report = std::move(final.report);
  result.deviation = std::move(final.deviation);
  result.violations = std::move(final.violations);
  return result;
}

}  // namespace

Expected<PrecisionResult> ConvertPrecision(::onnx::ModelProto fp32, const std::vector<Tensor>& inputs,
                                           const PrecisionOptions& options, const PrecisionSeams& seams) {
  NameUnnamedNodes(fp32);
  if (!options.fuse || !AlreadyFloat16(fp32).empty()) return Convert(std::move(fp32), nullptr, inputs, options, seams);
  ::onnx::ModelProto fused = fp32;
  fusion::FusionReport report = fusion::FuseForCuda(fused, {.pack_qkv = options.pack_qkv});
  if (!report.any()) return Convert(std::move(fp32), nullptr, inputs, options, seams);
  auto attempt = Convert(std::move(fused), &fp32, inputs, options, seams);
  if (attempt.ok() && attempt->within_budget()) {
    attempt->fusion = std::move(report);
    return attempt;
  }
  std::string why = attempt.ok() ? "the fused model broke the accuracy budget (" +
                                       (attempt->violations.empty() ? std::string("?") : attempt->violations.front()) + ")"
                                 : "the fused model did not run: " + attempt.status().message();
  auto plain = Convert(std::move(fp32), nullptr, inputs, options, seams);
  if (!plain.ok()) return plain;
  plain->fusion_dropped = fmt::format("{} attention and {} skip-layer-norm fusions dropped: {}", report.attention,
                                      report.skip_layer_norm, why);
  return plain;
}

}  // namespace ortgpu::precision
