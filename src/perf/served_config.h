// ServedSetup: how `ortgpu serve` runs a model, read from the configuration
// the server returns (GET /v2/models/M/config, Triton's JSON), and the
// `ortgpu bench` options that measure the same thing in process, so that
// perf --compare-in-process compares like with like: the same execution
// provider options, the I/O serve does (inputs staged in pinned memory,
// outputs copied to the host; CUDA graphs replayed per padded batch size),
// the batch size the load made the server run, and the request's own shapes.
//
// The rules mirror serve's loader (serve/repository/model_loader.cc): CUDA
// graphs are used only by GPU instances of a dynamically batched model
// whose batches are padded to the preferred sizes (the default on GPUs) with
// session_per_batch_size left on. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/benchmark.h"
#include "bench/precisions.h"
#include "ort/session_options.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::perf {

struct ServedSetup {
  int64_t max_batch_size = 0;
  bool dynamic_batching = false;
  std::vector<int64_t> preferred_batch_sizes;  // ascending
  // Batches padded up to a preferred size (parameter
  // pad_to_preferred_batch_size; on by default for GPU instances).
  bool pads = false;
  // "gpu", "cpu", or "" when the config names no instance kind.
  std::string instance_kind;
  // The CUDA execution accelerator's parameters (optimization {
  // execution_accelerators { gpu_execution_accelerator { name: "cuda" } } }),
  // enable_cuda_graph included only when serve uses graphs.
  std::map<std::string, std::string> cuda_options;
  OptimizationLevel optimization = OptimizationLevel::kAll;
  // Whether serve replays CUDA graphs for this model's padded batches.
  bool cuda_graphs = false;
  // Why a requested graph is not used ("" when none was requested or it is).
  std::string cuda_graph_note;
  // Input reshapes (config input.reshape), without the batch dimension.
  std::map<std::string, std::vector<int64_t>> reshapes;
  // The precision serve runs the model at (parameter precision: fp32,
  // tf32, fp16 or mixed, converted at load); none when the config names
  // none (the provider's default).
  std::optional<bench::Precision> precision;
  // What of the precision settings the in-process run cannot repeat
  // (block lists, a float16 interface); "" when nothing.
  std::string precision_note;
};

// Parses Triton's configuration JSON. InvalidArgument when it is not a JSON
// object or names a graph level or precision serve does not know.
Expected<ServedSetup> ParseServedSetup(const std::string& config_json);

// The batch size the server ran under the load: `average_batch` (its
// statistics' inferences per execution; 0 when unknown) rounded, padded up
// to the next preferred size when the server pads; without statistics the
// largest preferred size (else max_batch_size). `request_rows` for a model
// that does not batch dynamically.
int64_t ServedBatch(const ServedSetup& setup, int64_t request_rows, double average_batch);

// What the in-process run measures: the bench options and, in words and as
// the equivalent `ortgpu bench` command, what they are.
struct InProcessRun {
  bench::BenchOptions options;
  std::string io;                                       // "served", "served-graph"
  int64_t batch = 1;
  std::map<std::string, std::vector<int64_t>> shapes;  // by input, at `batch`
  std::map<std::string, std::string> cuda_options;
  std::string command;                                  // "ortgpu bench MODEL --provider cuda --io served-graph ..."
};

// The bench options that run `model_path` as serve runs the served model at
// `batch` rows (converted in process to the served precision, as serve
// converts at load; mixed is searched with the accuracy check on), with
// `request` (perf's request tensors, `rows` rows each)
// giving the shapes: their first dimension becomes `batch` for a batching
// model, and an input with a config reshape takes it. `spec` keeps perf's
// value ranges, seed and files. `provider` is used when the config names no
// instance kind. InvalidArgument for a request input of rank 0 in a
// batching model.
Expected<InProcessRun> InProcessRunFor(const ServedSetup& setup, const std::string& model_path, Provider provider,
                                       const std::vector<Tensor>& request, const bench::InputSpec& spec, int64_t batch);

}  // namespace ortgpu::perf
