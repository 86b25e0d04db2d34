// RunTune: `ortgpu tune` as a library call (issue 28, docs/TUNE.md). Reads
// the model's facts (batching, variable dims), builds the candidate space for
// the provider, runs the search (search.h) with the real measurer
// (tool_measurer.h) over a resumable history, and writes the winner as a model
// folder: OUTPUT/config.pbtxt and OUTPUT/1/model.onnx (a hard link or copy;
// the user's file is never modified). RenderTuneText explains the result.
//
// Blocking; call from one thread. Progress lines go through `log`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "ort/accuracy.h"
#include "ort/session.h"
#include "ort/session_options.h"
#include "perf/perf.h"
#include "tune/candidates.h"
#include "tune/run_details.h"
#include "tune/search.h"

namespace ortgpu::tune {

struct TuneOptions {
  // The ONNX file, or a model folder with a config.pbtxt (tune/model_folder.h).
  std::string model_path;
  // The model folder written (required for a file; a folder defaults to itself).
  std::string output_dir;
  double latency_budget_ms = 0;        // p99 budget (required, > 0)
  Provider provider = Provider::kCuda;
  int max_evaluations = 0;             // new measurements at most (0: no limit)
  // The history file; "" means OUTPUT/tune_history.jsonl.
  std::string history_path;
  int max_concurrency = 64;            // perf's budget search grows connections up to this
  // The HTML report written at the end of every run; "" means
  // OUTPUT/tune_report.html (tune/report.h).
  std::string report_path;
  // --max-gpu-memory: BYTES, a size with a unit (64GiB) or N% of GPU 0's
  // memory; "" no limit (tune/gpu_memory.h). Ignored, with a note, on the CPU.
  std::string max_gpu_memory;
  // The ortgpu binary whose serve is measured ("" means /proc/self/exe).
  std::string ortgpu_binary;
  std::function<void(const std::string&)> log;

  // --accuracy: the budget converted precisions (fp16, mixed) are judged
  // with against true float32 (bench's and convert's --budget grammar).
  PrecisionBudget accuracy;
  // --shape, --int-range, --input: the inputs bench generates (or reads)
  // in-process and the precision judge compares on; perf sends them and
  // serve's warm-up gets each input's shape at one row resolved from them.
  bench::InputSpec inputs;
  // --protocol: how perf sends the served measurements' requests.
  perf::Protocol protocol = perf::Protocol::kHttp;
  // --max-minutes: the search's wall time (0: no limit); what is left
  // unmeasured is listed with why, and a rerun with the history continues.
  double max_minutes = 10;
  // --max-served: served candidates measured at most (0: no limit).
  int max_served = 14;
  // --exhaustive: measure the grid (grid.h) after the search, for the record.
  bool exhaustive = false;
};

// The facts the search needs, read from the model: max_batch_size (the
// largest batch of `space` when the first dimension is symbolic, else 0),
// whether another dimension is variable, whether it has Conv nodes.
Expected<ModelTraits> TraitsFromModel(const std::string& model_path, const SpaceOptions& space);

// Each input's full shape at one row (batch dim 1) where `spec` names it or
// one of its symbolic dims, or gives its data (--input: the file's shape,
// its first dim 1 when the model's is the batch): what perf sends and serve
// warms up with. Inputs it does not concern are left out. Errors: a --shape
// that does not fit; with --input, what bench::MakeInputs refuses at one row
// (an input the model does not have, a file that cannot be read or holds
// another dtype, a dim no flag sizes).
Expected<std::map<std::string, std::vector<int64_t>>> ServedShapes(const std::vector<TensorInfo>& inputs,
                                                                    const bench::InputSpec& spec);

// The history keys' tags: "cosine=0.999,top1=0.99,rel=0.05,nonfinite=deny"
// for a budget; "inputs=seq:128,input_ids:0:30000,mask=9f2c41d07a6b3e85"
// for --shape, --int-range and --input (a file by the first 16 hex digits
// of its content's digest, so a moved file keeps its measurements and a
// changed one is measured again); "" when none is given. Errors: an
// --input file that cannot be read.
std::string BudgetTag(const PrecisionBudget& budget);
Expected<std::string> InputsTag(const bench::InputSpec& spec);

// The axes searched for `provider`: the full space on CUDA; on the CPU only
// a tiny space serve honours there (batch 1 or 4, instances 1-2, no queue
// delay, the default engine and workers): the CPU run checks the machinery,
// not a GPU's optimum. On CUDA padded candidates pad every batch
// (adaptive_padding false): the goodput of a busy server is the same, for a
// fraction of the load time.
SpaceOptions SpaceFor(Provider provider);

struct TuneReport {
  SearchResult search;
  std::string config_path;   // written; "" when no winner
  std::string history_path;
  std::vector<std::string> warnings;  // from the history
  RunDetails details;  // what the report shows beyond the search (tune/run_details.h)
};

// Errors: bad options, the model does not load, the history cannot be read
// or written, the output cannot be written. No winner (nothing met the
// budget) is not an error: the report says so and no config is written.
Expected<TuneReport> RunTune(const TuneOptions& options);

// What was measured and why the winner won, as text.
std::string RenderTuneText(const TuneReport& report);

}  // namespace ortgpu::tune
