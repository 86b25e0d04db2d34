// `ortgpu tune`: flags (one table, the source of --help), then
// tune::RunTune, then what was measured and why the winner won on stdout,
// progress on stderr. Errors: one line, non-zero exit.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "cli/commands.h"
#include "ort/accuracy.h"
#include "perf/perf.h"
#include "tune/report.h"
#include "tune/tune.h"

namespace ortgpu::cli {
namespace {

struct TuneFlags {
  std::string model;
  double latency_budget_ms = 0;
  std::string output;
  std::string provider = "cuda";
  int max_evaluations = 0;
  std::string history;
  int concurrency = 64;
  std::string accuracy;
  std::vector<std::string> shapes;
  std::vector<std::string> int_ranges;
  std::vector<std::string> input_files;  // --input NAME=FILE
  std::string protocol = "http";
  double max_minutes = 10;
  int max_served = 14;
  bool exhaustive = false;
  std::string report;          // --report FILE; "" OUTPUT/tune_report.html
  bool json = false;           // --json: the report as one JSON document on stdout
  std::string max_gpu_memory;  // --max-gpu-memory BYTES|SIZE|N%
};

// The flags that need parsing beyond CLI11's checks; errors name the flag.
Status ApplyFlags(const TuneFlags& f, tune::TuneOptions& o) {
  if (!f.accuracy.empty()) {
    auto budget = ParsePrecisionBudget(f.accuracy);
    if (!budget.ok()) return budget.status().WithContext("--accuracy");
    o.accuracy = *budget;
  }
  for (const auto& s : f.shapes) ORTGPU_RETURN_IF_ERROR(bench::ParseShapeFlag(s, o.inputs));
  for (const auto& s : f.int_ranges) ORTGPU_RETURN_IF_ERROR(bench::ParseIntRangeFlag(s, o.inputs));
  for (const auto& s : f.input_files) ORTGPU_RETURN_IF_ERROR(bench::ParseInputFlag(s, o.inputs));
  auto protocol = perf::ParseProtocol(f.protocol);
  if (!protocol.ok()) return protocol.status();
  o.protocol = *protocol;
  o.max_minutes = f.max_minutes;
  o.max_served = f.max_served;
  o.exhaustive = f.exhaustive;
  return Status::Ok();
}

int RunTuneCommand(const TuneFlags& flags) {
  tune::TuneOptions o;
  o.model_path = flags.model;
  o.output_dir = flags.output;
  o.latency_budget_ms = flags.latency_budget_ms;
  auto provider = ParseProvider(flags.provider);
  if (!provider.ok()) {
    std::fprintf(stderr, "ortgpu tune: %s\n", provider.status().message().c_str());
    return 2;
  }
  o.provider = *provider;
  o.max_evaluations = flags.max_evaluations;
  o.history_path = flags.history;
  o.max_concurrency = flags.concurrency;
  if (Status s = ApplyFlags(flags, o); !s.ok()) {
    std::fprintf(stderr, "ortgpu tune: %s\n", s.message().c_str());
    return 2;
  }
  o.report_path = flags.report;
  o.max_gpu_memory = flags.max_gpu_memory;
  o.log = [](const std::string& line) { std::fprintf(stderr, "tune: %s\n", line.c_str()); };
  auto report = tune::RunTune(o);
  if (!report.ok()) {
    std::fprintf(stderr, "ortgpu tune: %s\n", report.status().message().c_str());
    return ExitCodeFor(report.status().code());
  }
  if (flags.json) {
    std::fputs(tune::RenderTuneJson(*report).c_str(), stdout);
  } else {
    std::fputs(tune::RenderTuneText(*report).c_str(), stdout);
    std::printf("report: %s\n", report->details.report_path.c_str());
  }
  return report->search.winner ? 0 : 1;
}

}  // namespace

void AddTuneCommand(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Find the served configuration with the most goodput within a p99 latency budget: judge fp16 against the "
      "accuracy budget, screen the engine knobs one at a time in-process (bench), measure the latency curve, serve "
      "the candidates it predicts best (serve + perf) within --max-minutes, decide with the noise rule, and write "
      "OUTPUT/config.pbtxt, OUTPUT/1/model.onnx and the HTML report OUTPUT/tune_report.html (docs/TUNE.md). "
      "Resumable through --history. Exit 0 with a winner, 1 when none met the budget, 2 on bad usage.");
  cmd->add_option("model", f->model,
                  "The ONNX model file (never modified), or a model folder REPO/NAME/ (config.pbtxt and version "
                  "folders; or one version folder): its config's fields that tune does not search are kept")
      ->required();
  cmd->add_option("--latency-budget-ms", f->latency_budget_ms, "The p99 latency budget, in milliseconds (> 0)")
      ->required();
  cmd->add_option("--output", f->output,
                  "The model folder to write (config.pbtxt, 1/model.onnx); required for a file, a model folder "
                  "defaults to itself (only config.pbtxt is replaced, the old one kept as config.pbtxt.before-tune)");
  cmd->add_option("--provider", f->provider, "Execution provider: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_val("cuda");
  cmd->add_option("--max-evaluations", f->max_evaluations,
                  "Stop after this many new measurements (0: no limit); a rerun continues from the history")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  cmd->add_option("--history", f->history, "The history file (JSON lines); default OUTPUT/tune_history.jsonl");
  cmd->add_option("--concurrency", f->concurrency, "The most connections perf's budget search grows to")
      ->check(CLI::PositiveNumber)
      ->default_val(64);
  cmd->add_option("--accuracy", f->accuracy,
                  std::string(kPrecisionBudgetHelp) +
                      "; fp16 (and mixed when fp16 breaks it) is judged against true fp32 once, and is a candidate "
                      "only within it");
  cmd->add_option("--shape", f->shapes,
                  "NAME:DIMS for input NAME (input_ids:1x128) or a symbolic dim (seq:128), in-process and served; "
                  "repeatable");
  cmd->add_option("--int-range", f->int_ranges, "NAME:LO:HI, integer input values in [LO,HI) (input_ids:0:30000); repeatable");
  cmd->add_option("--input", f->input_files,
                  "NAME=FILE, real data from a .npy or ONNX TensorProto .pb file: measured in-process, sent by perf "
                  "and judged by --accuracy; repeatable");
  cmd->add_option("--protocol", f->protocol, "How the served measurements send requests: http or grpc")
      ->check(CLI::IsMember({"http", "grpc"}))
      ->default_val("http");
  cmd->add_option("--max-minutes", f->max_minutes,
                  "Wall time of the search (0: no limit); what is left unmeasured is listed, and a rerun with the "
                  "history continues")
      ->check(CLI::NonNegativeNumber)
      ->default_val(10);
  cmd->add_option("--max-served", f->max_served, "Served candidates measured at most (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(14);
  cmd->add_flag("--exhaustive,--grid", f->exhaustive,
                "After the search, measure every candidate of a small grid (the screened engine, batches 16/32/64, "
                "1-2 instances, 1-2 workers, padded, queue delay 0 or 2 ms) and print the winner's share of its best");
  cmd->add_option("--report", f->report, "Write the HTML report here instead of OUTPUT/tune_report.html")
      ->type_name("FILE");
  cmd->add_flag("--json", f->json, "Print the report as one JSON document instead of the text (the HTML embeds it)");
  cmd->add_option("--max-gpu-memory", f->max_gpu_memory,
                  "Leave out candidates whose GPU memory (estimated until measured) exceeds this: bytes, a size "
                  "(64GiB, 80GB, 512MiB) or a percentage of GPU 0's memory (90%); does not apply to --provider cpu")
      ->type_name("BYTES|SIZE|N%");
  cmd->callback([f, &result]() { result.exit_code = RunTuneCommand(*f); });
}

}  // namespace ortgpu::cli
