// The precision a model version is served in (issue 26; docs/SERVING.md,
// "Precision"): config.pbtxt's parameters
//
//   precision        fp32 | tf32 | fp16 | mixed   (absent: as ORT defaults)
//   precision_budget KEY=VALUE,... as `ortgpu convert --budget`
//   precision_check  enforce (default) | warn | off
//   precision_io     fp32 (default) | fp16
//   precision_op_block_list    op types kept float32 (convert --op-block-list; default: default)
//   precision_node_block_list  node names kept float32 (convert --node-block-list)
//
// fp32 and tf32 choose the CUDA EP's use_tf32 (0 and 1); fp16 and mixed
// convert the model at load (precision/precision.h) before any instance's
// session is made, keep the converted model in the model cache
// (precision/model_cache.h; never beside the user's model), and judge it
// against true float32 on the model's warm-up inputs. Out of the budget the
// version is UNAVAILABLE with the measured figures (enforce), or READY with
// a warning (warn).
//
// ORT is reached only through PrecisionEngineFactory, so tests fake the
// runs. Functions are called by one loading thread per version.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ort/accuracy.h"
#include "ort/session_options.h"
#include "ort/tensor.h"
#include "precision/convert.h"
#include "precision/evaluate.h"
#include "serve/scheduler/scheduler_observer.h"
#include "status/expected.h"

namespace ortgpu::serve {

enum class ServedPrecision { kDefault, kFp32, kTf32, kFp16, kMixed };
enum class PrecisionCheck { kEnforce, kWarn, kOff };

struct PrecisionSettings {
  ServedPrecision precision = ServedPrecision::kDefault;
  PrecisionBudget budget;  // docs/PRECISION.md's defaults
  PrecisionCheck check = PrecisionCheck::kEnforce;
  // precision_io fp16: the converted model's float32 inputs and outputs
  // become float16 (keep_io_types off), and clients send and receive FP16.
  bool fp16_io = false;
  // Op types and node names kept in float32 (precision/block_list.h).
  std::vector<std::string> op_block_list = precision::DefaultOpBlockList();
  std::map<std::string, std::string> node_block_list;
  bool converts() const { return precision == ServedPrecision::kFp16 || precision == ServedPrecision::kMixed; }
};

// Reads the parameters above. InvalidArgument naming the parameter, the
// value seen and the values accepted; precision_io fp16 or a block list
// without fp16 or mixed is refused (there is nothing to convert).
Expected<PrecisionSettings> ParsePrecisionSettings(const std::map<std::string, std::string>& params);
// "fp32", "tf32", "fp16", "mixed"; "" for kDefault.
std::string_view PrecisionName(ServedPrecision p);

// fp32: use_tf32=0 on CUDA (true float32); tf32: use_tf32=1. Others: no change.
void ApplyPrecision(const PrecisionSettings& settings, SessionOptions& options);

// What the loader found, for the start-up summary, the READY log line,
// /v2/models/M/config (parameter precision_accuracy) and the metrics.
struct PrecisionOutcome {
  std::string precision;      // PrecisionName; "" when the config sets none
  bool converted = false;     // served from a converted model
  bool from_cache = false;    // ... taken from the model cache (no conversion this load)
  bool already_fp16 = false;  // fp16 asked of a float16 model: served as it is
  bool checked = false;       // the figures below were measured
  bool reused_figures = false;  // ... by an earlier load on the same inputs (in the cache record)
  double min_cosine = 1;      // over every row of every compared output
  double max_rel_error = 0;   // max |a - r| / max |r| over outputs
  bool has_top1 = false;      // some output is a classifier
  double top1 = 1;            // lowest arg-max agreement over classifier outputs
  std::vector<std::string> violations;  // of the budget; empty: within it
  std::string note;           // why not checked; that the cache was not written
  // The model cache: "hit", "stored", "not written" (the folder could not
  // be written), "off" (no cache folder), "float16 already" (nothing converted).
  std::string cache;
  bool within_budget() const { return violations.empty(); }
  // "fp16 (converted, from the cache): min cosine 0.99998, max rel err 0.12%, top-1 100%, within budget".
  std::string Describe() const;
  // "min_cosine=0.99998,max_rel_error=0.0012,top1=1,within_budget=true" ("not checked: ..." unchecked).
  std::string AccuracyText() const;
};

// What the metrics show of `outcome`.
PrecisionFigures PrecisionFiguresOf(const PrecisionOutcome& outcome);

// The runs a conversion needs, made for the first instance's session
// options: `reference` true float32 (precision::Float32Reference),
// `candidate` as served, `placement` on CUDA only (null otherwise).
struct PrecisionEngine {
  std::unique_ptr<precision::ModelRunner> reference;
  std::unique_ptr<precision::ModelRunner> candidate;
  std::unique_ptr<precision::PlacementObserver> placement;
};
using PrecisionEngineFactory = std::function<PrecisionEngine(const SessionOptions& options)>;
PrecisionEngineFactory RealPrecisionEngineFactory();

struct PrecisionRequest {
  std::string model_path;  // the user's float32 model
  PrecisionSettings settings;
  SessionOptions session;  // the first instance's (provider, CUDA options)
  // Warm-up inputs in the order the loader tries them (the config's
  // model_warmup samples, else the generated candidates); the check uses
  // the first the float32 model runs.
  std::vector<std::vector<Tensor>> input_choices;
  std::string cache_dir;   // "": no cache (convert into a private temporary folder)
};

// The model a version's sessions load.
struct PreparedModel {
  std::string path;            // the converted model (or the user's when nothing was converted)
  PrecisionOutcome outcome;
  std::shared_ptr<const void> scratch;  // keeps a converted model outside the cache until unload
};

// Converts (or finds in the cache), checks and judges. Errors: the model
// does not read or convert, mixed without an input the model runs, and
// under precision_check enforce a model outside the budget
// (FailedPrecondition with the measured figures and what to change). No
// message carries a server path.
Expected<PreparedModel> PrepareModelPrecision(const PrecisionRequest& request, const PrecisionEngineFactory& engines);

}  // namespace ortgpu::serve
