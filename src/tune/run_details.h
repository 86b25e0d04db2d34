// What a tune run was asked and measured beyond the search's own result
// (issue 28): the input and output, the budget and provider, the model's
// traits (with the memory estimate's inputs and limit), what tune changed in
// the user's config, and every measurement the search used, read back from
// the history with the details the report shows (perf's steps, memory, load
// time). RunTune fills it; the report (tune/report.h) renders it. Value
// types; CollectMeasurements is a pure function of its arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tune/candidates.h"
#include "tune/history.h"
#include "tune/measurement.h"
#include "tune/search.h"

namespace ortgpu::tune {

// One in-process measurement of an engine choice at a batch, or its failure.
struct InProcessPoint {
  EngineChoice engine;
  int64_t batch = 1;
  Measurement measurement;  // valid when error is ""
  std::string error;
};

struct RunDetails {
  std::string model_file;    // the ONNX file measured
  std::string model_folder;  // the model folder tuned; "" for a file
  std::string base_config;   // the user's config.pbtxt that was the base; ""
  std::string output_dir;
  std::string report_path;   // the HTML report written; "" before it is
  std::string provider;      // "cuda", "cpu"
  double latency_budget_ms = 0;
  ModelTraits traits;        // what the rules used (max batch, memory estimate and limit)
  std::string memory_limit_source;  // how --max-gpu-memory was resolved; "" without it
  std::string config_pbtxt;         // the config written; "" when none
  std::vector<std::string> config_changes;  // what tune changed in the user's config
  std::vector<InProcessPoint> in_process;   // every engine choice x batch found in the history
  // Per SearchResult::served (same order): each repeat's measurement that
  // succeeded, in repeat order.
  std::vector<std::vector<Measurement>> served;
};

// Reads back from `history` what the search measured for this run: every
// valid engine choice of `space` at every valid batch (in space order), and
// each served outcome's repeats, under the keys the search used with
// `options` (its latency budget, inputs tag and served tag).
void CollectMeasurements(const ModelTraits& traits, const SpaceOptions& space, const SearchOptions& options,
                         const SearchResult& search, const History& history, RunDetails& details);

}  // namespace ortgpu::tune
