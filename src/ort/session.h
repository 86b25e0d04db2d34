// Session: one ONNX Runtime inference session on one execution provider, the
// object `doctor`, `bench` and `serve` all run models through (so what is
// benchmarked is what is served).
//
// Built by Load/LoadFromBytes, which never throw: every ORT failure becomes a
// Status whose message says what ORT said and what to do. Run() may be called
// from several threads at once (ORT's Run is thread-safe); Load and
// EndProfiling are not to be called concurrently with anything else on the
// same object. This header keeps ORT's own headers out of its includers.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ort/session_options.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace Ort {
struct Session;
}

namespace ortgpu {

struct TensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  // -1 for a symbolic or unknown dimension.
  std::vector<int64_t> shape;
  // The symbolic name of each dimension ("batch"), "" where none.
  std::vector<std::string> dim_names;
  bool is_tensor = true;   // false for sequences and maps (not served)
  std::string type_text;   // "tensor(float)"
};

// What ORT did with the weights a session was offered
// (SessionOptions::shared_initializers), read from its log while the
// session was created.
struct SharedInitializerUse {
  // False when the log did not show the session saving its initializers
  // (records lost to a flood of other logging): nothing is known then.
  bool known = false;
  // Offered initializers the session uses as they are (no copy of its own).
  std::vector<std::string> used;
  // Offered initializers ORT planned on another device, so it made its own copy.
  std::vector<std::string> copied;
  // ORT's words for the first of those (the planned and the offered device).
  std::string copied_reason;
};

// What a run does with its arena afterwards: keep every chunk it took (ORT's
// default: the next run of that size allocates nothing), or give back every
// chunk the run left free (ORT's run option
// memory.enable_memory_arena_shrinkage on the session's device), so a run
// larger than the planned ones leaves no memory behind.
enum class ArenaAfterRun { kKeep, kShrink };

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // REQUIRES: for Provider::kCuda the CUDA libraries are loadable (see
  // gpu/preload.h); otherwise the Status carries ORT's load error.
  static Expected<std::unique_ptr<Session>> Load(const std::string& model_path, const SessionOptions& options);
  // `label` names the model in messages.
  static Expected<std::unique_ptr<Session>> LoadFromBytes(std::string_view model_bytes, const SessionOptions& options,
                                                          const std::string& label);

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const SessionOptions& options() const { return options_; }
  const std::string& label() const { return label_; }
  // Wall time Load took, in milliseconds.
  double load_ms() const { return load_ms_; }
  // With options().shared_initializers: which of them ORT used.
  const SharedInitializerUse& shared_initializer_use() const { return shared_use_; }
  // The ORT log severity runs of this session log at (RunOptions), or -1
  // for the session's own. A session with shared initializers was created
  // at info level (to read which ORT used); its runs go back to warning, so
  // the hot path logs no more than any other session's.
  int run_log_severity() const;

  // Runs the model on host tensors, matched to inputs by name. Checks names,
  // types and shapes first so a bad request gets a precise message.
  // `output_names` empty means all outputs, in model order.
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs,
                                    const std::vector<std::string>& output_names = {},
                                    ArenaAfterRun after = ArenaAfterRun::kKeep) const;

  // Runs once with ORT's run-level profiling on and returns the path of the
  // profile it wrote ("<prefix>_<timestamp>.json"); other runs are not
  // profiled, so timings of plain Run() calls stay clean.
  Expected<std::string> RunProfiled(const std::vector<Tensor>& inputs, const std::string& prefix) const;

  // Checks `inputs` against the model's inputs without running.
  Status ValidateInputs(const std::vector<Tensor>& inputs) const;

  // Stops profiling and returns the profile file's path.
  // REQUIRES: options().profile_prefix was set.
  Expected<std::string> EndProfiling();

  // The ORT session, for code inside src/ort/ only.
  Ort::Session& native() const { return *session_; }

 private:
  Expected<std::vector<Tensor>> RunWith(const std::vector<Tensor>& inputs, const std::vector<std::string>& output_names,
                                        const std::string& profile_prefix, ArenaAfterRun after) const;
  Session() = default;
  static Expected<std::unique_ptr<Session>> Create(const std::string* path, std::string_view bytes,
                                                   const SessionOptions& options, const std::string& label);

  std::unique_ptr<Ort::Session> session_;
  SessionOptions options_;
  std::string label_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  double load_ms_ = 0;
  SharedInitializerUse shared_use_;
};

}  // namespace ortgpu
