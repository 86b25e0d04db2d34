// `ortgpu convert MODEL --to fp16|mixed --output OUT`: flags (one table, the
// source of --help), then precision::ConvertPrecision, then the report on
// stdout: nodes converted and kept (and why), Casts, accuracy per output
// against true float32, times. Exit 0 when the model was written within the
// budget (or unchecked), 1 when written outside it or when a step failed, 2
// on bad usage.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/inputs.h"
#include "cli/commands.h"
#include "onnx.pb.h"
#include "ort/session.h"
#include "precision/block_list.h"
#include "precision/model_file.h"
#include "precision/precision.h"

namespace ortgpu::cli {
namespace {

struct ConvertFlags {
  std::string model;
  std::string to = "fp16";
  std::string output;
  bool keep_io_types = true;
  std::vector<std::string> op_block_list = {"default"};
  std::vector<std::string> node_block_list;
  std::string provider = "cpu";
  std::vector<std::string> cuda_options;
  std::vector<std::string> shapes;
  std::vector<std::string> int_ranges;
  std::vector<std::string> input_files;
  int64_t batch = 4;
  uint32_t seed = 1;
  std::string budget;
  bool no_check = false;
  bool no_placement = false;
  std::string fuse = "auto";
  int max_evaluations = 80;
};

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
// CPU time this process used (user + system), in ms: on a shared or loaded
// machine the figure that says what the conversion itself costs.
double CpuMs() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

Expected<precision::PrecisionOptions> ToOptions(const ConvertFlags& f, SessionOptions& session) {
  precision::PrecisionOptions o;
  ORTGPU_ASSIGN_OR_RETURN(o.target, precision::ParseTarget(f.to));
  o.convert.keep_io_types = f.keep_io_types;
  o.convert.op_block_list = precision::ParseOpBlockList(f.op_block_list);
  o.convert.node_block_list = precision::ParseNodeBlockList(f.node_block_list, "named in --node-block-list");
  ORTGPU_ASSIGN_OR_RETURN(o.budget, ParsePrecisionBudget(f.budget));
  o.max_evaluations = f.max_evaluations;
  ORTGPU_ASSIGN_OR_RETURN(session.provider, ParseProvider(f.provider));
  if (session.provider == Provider::kTensorRt) {
    return InvalidArgument("--provider tensorrt: convert judges float16 on cpu or cuda; TensorRT makes its own "
                           "precision choices (trt_fp16_enable)");
  }
  for (const auto& kv : f.cuda_options) {
    ORTGPU_RETURN_IF_ERROR(ParseKeyValue(kv, session.cuda_options).WithContext("--cuda-option"));
  }
  if (!session.cuda_options.empty() && session.provider == Provider::kCpu) {
    return InvalidArgument("--cuda-option needs --provider cuda (the CPU provider takes no CUDA options)");
  }
  ORTGPU_RETURN_IF_ERROR(ValidateCudaOptions(session.cuda_options));
  // Fused attention and layer normalisation are what the CUDA EP runs
  // fastest in float16; the CPU provider has no float16 kernels for them.
  o.fuse = f.fuse == "on" || (f.fuse == "auto" && session.provider == Provider::kCuda);
  // Packed QKV has no CPU kernel: `--fuse on` for the CPU fuses unpacked.
  o.pack_qkv = session.provider == Provider::kCuda;
  if (o.target == precision::Target::kMixed && f.no_check) {
    return InvalidArgument("--to mixed searches by the accuracy check; drop --no-check or use --to fp16");
  }
  return o;
}

// The inputs the check and the placement run use: --input files, else
// generated from the model's input metadata (bench's rules and flags).
Expected<std::vector<Tensor>> MakeCheckInputs(const ConvertFlags& f) {
  bench::InputSpec spec;
  for (const auto& s : f.shapes) ORTGPU_RETURN_IF_ERROR(bench::ParseShapeFlag(s, spec));
  for (const auto& s : f.int_ranges) ORTGPU_RETURN_IF_ERROR(bench::ParseIntRangeFlag(s, spec));
  for (const auto& s : f.input_files) ORTGPU_RETURN_IF_ERROR(bench::ParseInputFlag(s, spec));
  spec.seed = f.seed;
  SessionOptions cpu;
  cpu.optimization = OptimizationLevel::kDisable;
  ORTGPU_ASSIGN_OR_RETURN(auto session, Session::Load(f.model, cpu));
  return bench::MakeInputs(session->inputs(), spec, f.batch);
}

std::string Percent(double share) { return fmt::format("{:.1f}%", share * 100); }

void PrintReport(const precision::PrecisionResult& r, const precision::PrecisionOptions& o, const std::string& output) {
  const auto& rep = r.report;
  std::printf("nodes: %d, %zu now float16, %zu kept float32\n", rep.nodes_total, rep.converted.size(),
              rep.kept_fp32.size());
  std::printf("weights: %d initializers to float16, %d kept float32 with a float16 copy, %d constants; %lld values "
              "clipped to float16's range\n",
              rep.initializers_converted, rep.initializers_duplicated, rep.constants_converted,
              static_cast<long long>(rep.values_clipped));
  std::printf("casts: %d added, %d of the model's retargeted to float16, %d removed\n", rep.casts_added,
              rep.casts_retargeted, rep.casts_removed);
  if (r.fusion.any()) {
    std::printf("fused before converting: %d attention -> MultiHeadAttention, %d Add + LayerNormalization -> "
                "SkipLayerNormalization (%d nodes fewer)\n",
                r.fusion.attention, r.fusion.skip_layer_norm, r.fusion.nodes_removed);
  }
  if (!r.fusion_dropped.empty()) std::printf("not fused: %s\n", r.fusion_dropped.c_str());
  if (!rep.kept_fp32.empty()) {
    std::printf("kept float32:\n");
    for (const auto& k : rep.kept_fp32) std::printf("  %s (%s): %s\n", k.name.c_str(), k.op_type.c_str(), k.reason.c_str());
  }
  if (!r.checked) {
    std::printf("accuracy: not checked (--no-check)\n");
  } else {
    std::printf("accuracy against float32 (TF32 off); budget: %s\n", DescribeBudget(o.budget).c_str());
    std::printf("  %-24s %-14s %10s %10s %10s %10s %8s %7s %7s\n", "output", "shape", "max abs", "max rel",
                "cos min", "cos mean", "NaN/Inf", "top-1", "top-5");
    for (const auto& d : r.deviation.outputs) {
      if (!d.compared) {
        std::printf("  %-24s %-14s %s\n", d.name.c_str(), d.shape.c_str(), d.note.c_str());
        continue;
      }
      std::printf("  %-24s %-14s %10.3g %10.3g %10.6f %10.6f %8lld %7s %7s\n", d.name.c_str(), d.shape.c_str(),
                  d.max_abs_error, d.max_rel_error, d.cosine_min, d.cosine_mean,
                  static_cast<long long>(d.new_nan + d.new_inf), d.classifier ? Percent(d.top1_agreement).c_str() : "-",
                  d.classifier ? Percent(d.top5_overlap).c_str() : "-");
    }
    if (o.target == precision::Target::kMixed) {
      if (r.fp16_violations.empty()) {
        std::printf("mixed: all-float16 is within the budget; no node needed float32 (%d evaluation)\n", r.evaluations);
      } else {
        std::printf("mixed: all-float16 broke the budget (%s); %zu node(s) kept float32 after %d evaluations\n",
                    r.fp16_violations.front().c_str(), r.kept_for_accuracy.size(), r.evaluations);
      }
    }
    for (const auto& v : r.violations) std::printf("outside the budget: %s\n", v.c_str());
    if (!r.note.empty()) std::printf("note: %s\n", r.note.c_str());
  }
  std::printf("written: %s\n", output.c_str());
}

int RunConvertCommand(const ConvertFlags& f) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "ortgpu convert: %s\n", st.message().c_str());
    return ExitCodeFor(st.code());
  };
  const auto start = Clock::now();
  SessionOptions session;
  auto options = ToOptions(f, session);
  if (!options.ok()) return fail(options.status());
  auto model = precision::ReadModelFile(f.model);
  if (!model.ok()) return fail(model.status());
  const double read_ms = MsSince(start);
  std::vector<Tensor> inputs;
  const bool placement = session.provider == Provider::kCuda && !f.no_placement;
  if (!f.no_check || placement) {
    auto made = MakeCheckInputs(f);
    if (!made.ok()) return fail(made.status());
    inputs = std::move(*made);
  }
  precision::OrtModelRunner reference(precision::Float32Reference(session)), candidate(session);
  precision::OrtPlacementObserver observer(session);
  precision::PrecisionSeams seams;
  if (!f.no_check) {
    seams.reference = &reference;
    seams.candidate = &candidate;
  }
  if (placement) seams.placement = &observer;
  const auto convert_start = Clock::now();
  auto result = precision::ConvertPrecision(std::move(*model), inputs, *options, seams);
  if (!result.ok()) return fail(result.status());
  const double convert_ms = MsSince(convert_start);
  if (result->report.already_fp16) std::printf("%s; written unchanged\n", result->report.message.c_str());
  const auto write_start = Clock::now();
  auto written = precision::WriteModelFile(result->model, f.output);
  if (!written.ok()) return fail(written.status());
  if (*written) std::printf("the model is over 2 GB: weights written to %s.data\n", f.output.c_str());
  if (!result->report.already_fp16) PrintReport(*result, *options, f.output);
  std::printf("time: %.0f ms (read %.0f, %s %.0f, write %.0f); CPU time %.0f ms\n", MsSince(start), read_ms,
              f.no_check ? "convert" : "convert and check", convert_ms, MsSince(write_start), CpuMs());
  if (result->checked && !result->within_budget()) {
    std::fprintf(stderr, "ortgpu convert: the %s model is outside the accuracy budget (%s)%s\n",
                 std::string(precision::TargetName(options->target)).c_str(), result->violations.front().c_str(),
                 options->target == precision::Target::kFp16 ? "; --to mixed keeps the nodes responsible in float32" : "");
    return 1;
  }
  return 0;
}

}  // namespace

void AddConvertCommand(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<ConvertFlags>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a float32 model to float16 (--to fp16) or to float16 with the nodes that break the accuracy budget "
      "kept in float32 (--to mixed), and judge every output against true float32 (TF32 off). On --provider cuda, "
      "nodes ORT would run on the CPU in float16 stay float32. Exit 0 when written within the budget, 1 when "
      "outside it or on failure, 2 on bad usage. docs/PRECISION.md has the rules.");
  cmd->add_option("model", f->model, "The float32 ONNX model (external data is read from its folder)")->required();
  cmd->add_option("--to", f->to, "fp16 or mixed")->check(CLI::IsMember({"fp16", "mixed"}))->default_val("fp16");
  cmd->add_option("-o,--output", f->output, "Where to write the converted model")->required();
  cmd->add_option("--keep-io-types", f->keep_io_types,
                  "true: float32 inputs and outputs stay float32 (Casts at the boundary); false: they become float16")
      ->default_val(true);
  cmd->add_option("--op-block-list", f->op_block_list,
                  "Op types kept float32, comma-separated; 'default' is ORT's list (TopK, Resize, Range, CumSum, Min, "
                  "Max, ...), 'none' converts every op; default: default")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--node-block-list", f->node_block_list, "Node names kept float32, comma-separated")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--provider", f->provider, "Where the accuracy check and the placement pass run: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_val("cpu");
  cmd->add_option("--cuda-option", f->cuda_options, "CUDA EP option KEY=VALUE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--input", f->input_files, "NAME=FILE, real data (.npy or .pb) for the check; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--shape", f->shapes, "NAME:DIMS for an input or a symbolic dim of the generated inputs; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--int-range", f->int_ranges, "NAME:LO:HI, integer input values in [LO,HI); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--batch", f->batch, "Batch of the generated inputs where the first dim is symbolic")
      ->check(CLI::PositiveNumber)
      ->default_val(4);
  cmd->add_option("--seed", f->seed, "Seed of the generated inputs")->default_val(1);
  cmd->add_option("--budget", f->budget, kPrecisionBudgetHelp);
  cmd->add_flag("--no-check", f->no_check, "Convert only: no accuracy check (not with --to mixed)");
  cmd->add_flag("--no-placement", f->no_placement, "On --provider cuda: skip the placement-aware pass");
  cmd->add_option("--fuse", f->fuse,
                  "Fuse attention and Add+LayerNormalization before converting (kept only when the fused model "
                  "runs within the budget): auto (on with --provider cuda), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->default_val("auto");
  cmd->add_option("--max-evaluations", f->max_evaluations, "--to mixed: models converted and run at most")
      ->check(CLI::PositiveNumber)
      ->default_val(80);
  cmd->callback([f, &result]() { result.exit_code = RunConvertCommand(*f); });
}

}  // namespace ortgpu::cli
