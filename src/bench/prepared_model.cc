#include "bench/prepared_model.h"

#include <fmt/format.h>

#include "precision/model_file.h"
#include "precision/precision.h"

namespace ortgpu::bench {
namespace {

// Hands ConvertPrecision the true float32 outputs the preparer computed
// once. ConvertPrecision asks its reference runner for the float32 model's
// outputs only, on the inputs it was given, which are the preparer's.
class CachedReference : public precision::ModelRunner {
 public:
  explicit CachedReference(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto&, const std::vector<Tensor>&) override { return outputs_; }

 private:
  std::vector<Tensor> outputs_;
};

std::string Summary(Precision p, const precision::PrecisionResult& r) {
  const auto& rep = r.report;
  std::string s = fmt::format("{}: {} of {} nodes float16, {} kept float32", PrecisionName(p), rep.converted.size(),
                              rep.nodes_total, rep.kept_fp32.size());
  if (!r.kept_for_placement.empty()) {
    s += fmt::format(" ({} so that ORT places no new node on the CPU)", r.kept_for_placement.size());
  }
  if (p == Precision::kMixed) {
    s += fmt::format("; {} kept float32 for accuracy after {} evaluations", r.kept_for_accuracy.size(), r.evaluations);
  }
  if (rep.values_clipped > 0) s += fmt::format("; {} values clipped to float16's range", rep.values_clipped);
  if (r.fusion.any()) {
    s += fmt::format("; fused {} attention and {} skip layer norms", r.fusion.attention, r.fusion.skip_layer_norm);
  }
  if (!r.fusion_dropped.empty()) s += "; " + r.fusion_dropped;
  if (!r.note.empty()) s += "; " + r.note;
  return s;
}

}  // namespace

ModelPreparer::ModelPreparer(::onnx::ModelProto fp32, std::vector<Tensor> inputs, PrepareOptions options)
    : fp32_(std::move(fp32)), inputs_(std::move(inputs)), options_(std::move(options)) {}

Expected<std::vector<Tensor>> ModelPreparer::Reference() {
  if (!reference_) {
    precision::OrtModelRunner runner(precision::Float32Reference(options_.session));
    auto outputs = runner.Run(fp32_, inputs_);
    if (!outputs.ok()) return outputs.status().WithContext("running the model in float32 (TF32 off) for the accuracy reference");
    reference_ = std::move(outputs).value();
  }
  return *reference_;
}

Expected<PreparedModel> ModelPreparer::Prepare(Precision p) {
  PreparedModel out;
  out.precision = p;
  if (p == Precision::kFp32) {
    out.accuracy = ReferenceAccuracy();
    return out;
  }
  const bool check = options_.check_accuracy;
  if (p == Precision::kTf32) {
    if (!check) {
      out.accuracy.note = "--no-check";
      return out;
    }
    ORTGPU_ASSIGN_OR_RETURN(auto reference, Reference());
    precision::OrtModelRunner tf32(options_.session);
    auto actual = tf32.Run(fp32_, inputs_);
    if (!actual.ok()) return actual.status().WithContext("running the model at tf32 for the accuracy check");
    out.accuracy = SummariseDeviation(CompareDeviation(*actual, reference), options_.budget);
    return out;
  }
  if (p == Precision::kMixed && !check) {
    return InvalidArgument("--precision mixed searches by the accuracy check; drop --no-check or use fp16");
  }
  precision::PrecisionOptions po;
  po.target = p == Precision::kMixed ? precision::Target::kMixed : precision::Target::kFp16;
  po.budget = options_.budget;
  po.max_evaluations = options_.max_evaluations;
  // As convert does: attention and layer normalisation fused on CUDA, kept
  // only when the fused model runs within the budget.
  po.fuse = options_.session.provider == Provider::kCuda;
  std::optional<CachedReference> reference;
  precision::OrtModelRunner candidate(options_.session);
  precision::OrtPlacementObserver observer(options_.session);
  precision::PrecisionSeams seams;
  if (check) {
    ORTGPU_ASSIGN_OR_RETURN(auto outputs, Reference());
    reference.emplace(std::move(outputs));
    seams.reference = &*reference;
    seams.candidate = &candidate;
  }
  // On the CPU there is nothing to move off the target provider.
  if (options_.session.provider == Provider::kCuda) seams.placement = &observer;
  auto result = precision::ConvertPrecision(fp32_, inputs_, po, seams);
  if (!result.ok()) return result.status().WithContext(fmt::format("converting the model to {}", PrecisionName(p)));
  if (result->model.ByteSizeLong() > precision::WriteOptions().inline_limit) {
    return FailedPrecondition(fmt::format("the {} model is over 2 GB, more than bench can hold in memory; write it "
                                          "with `ortgpu convert --to {} --output FILE` and bench that file",
                                          PrecisionName(p), PrecisionName(p)));
  }
  out.model_bytes = result->model.SerializeAsString();
  if (result->report.already_fp16) {
    out.accuracy.note = result->report.message;
    out.summary = fmt::format("{}: {}; measured unchanged", PrecisionName(p), result->report.message);
    return out;
  }
  out.summary = Summary(p, *result);
  if (!result->checked) {
    out.accuracy.note = "--no-check";
    return out;
  }
  out.accuracy = SummariseDeviation(result->deviation, options_.budget);
  return out;
}

}  // namespace ortgpu::bench
