// What `ortgpu tune` tunes, and how the result goes back (issue 28): an ONNX
// file, or a model folder that already has a config.pbtxt. For a folder, the
// user's config is the base: what tune does not search (name, inputs and
// outputs, model_warmup, other parameters, other accelerator options, the
// instance group's kind and GPUs, max_batch_size when it is set) is kept,
// max_batch_size bounds the searched batches, and the comment lines of the
// written config say what tune changed. Pure functions except
// ResolveTuneInput and WriteTunedFolder, which read and write files.
// Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "status/expected.h"
#include "tune/candidates.h"
#include "tune/config_writer.h"

namespace ortgpu::tune {

struct TuneInput {
  std::string model_file;   // the ONNX file measured
  std::string folder;       // the model folder (REPO/NAME); "" for a file
  std::string config_path;  // the folder's config.pbtxt; "" when it has none
  std::optional<inference::ModelConfig> base;  // what that config.pbtxt says
  // The config sets max_batch_size (0 included): it bounds the search.
  std::optional<int64_t> config_max_batch_size;
  // The folder the result goes to: --output, or the model folder itself
  // when a folder is tuned without --output.
  std::string output_dir;
  // output_dir is the model folder: only config.pbtxt is replaced (the
  // previous one kept as config.pbtxt.before-tune), version folders untouched.
  bool in_place = false;
};

// `path` is an ONNX file, a model folder (config.pbtxt and/or numeric version
// folders: the highest version holding the model file is measured) or one
// version folder of it (REPO/NAME/3: that version, the parent's config).
// The model file is config's default_model_filename, else model.onnx.
// `output_dir` "" is allowed for a folder only (the folder itself). Errors
// name what was looked for: InvalidArgument for bad usage, a config that
// does not parse (file, line and column).
Expected<TuneInput> ResolveTuneInput(const std::string& path, const std::string& output_dir);

// The config bounds the search: a max_batch_size it sets (0: the model does
// not batch) replaces the one read from the model (the largest searched batch
// when the model batches); `notes` (nullable) says when that leaves batches
// out. A larger one only goes into the written config.
void BoundTraitsByConfig(const TuneInput& input, ModelTraits& traits, std::vector<std::string>* notes);

// The base a served candidate is measured with in tune's scratch folder: the
// user's config with what ties it to its own folder removed (name,
// default_model_filename, version_policy, model_warmup entries that read
// files beside the model), so that what is measured is what is written.
std::optional<inference::ModelConfig> ScratchBase(const TuneInput& input);

// The base the written config starts from: the user's config, tied to the
// output folder when it is another one (name set to its folder name;
// default_model_filename and version_policy cleared: it holds 1/model.onnx).
std::optional<inference::ModelConfig> OutputBase(const TuneInput& input);

// What tune changed between `before` (the user's config; nullopt: none) and
// `after`, one line per field it searched ("instance_group: count 4 -> count
// 2", "dynamic_batching.preferred_batch_size: [] -> [32]"), plus the fields
// tied to another folder that OutputBase changed.
std::vector<std::string> DescribeChanges(const std::optional<inference::ModelConfig>& before,
                                         const inference::ModelConfig& after);

// The config text written for `winner`: the comment lines of `writer`, then
// what tune changed in the user's config (when there was one) and what it
// kept, then the fields. `changes` (nullable) receives DescribeChanges.
std::string TunedFolderConfig(const TuneInput& input, const ServedCandidate& winner, ConfigWriterOptions writer,
                              std::vector<std::string>* changes);

// Writes the tuned folder: in place, config.pbtxt replaced (the previous one
// kept as config.pbtxt.before-tune); otherwise WriteModelFolder (config and
// 1/model.onnx linked or copied).
Status WriteTunedFolder(const TuneInput& input, const std::string& config_pbtxt);

}  // namespace ortgpu::tune
