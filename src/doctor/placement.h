// Node placement: where each node of a model really ran, from ORT's profile,
// and whether what stayed on the CPU matters.
//
// The CUDA EP leaves shape computation (Shape, Gather, Unsqueeze, Concat ...
// on small tensors) on the CPU on purpose: cheap and benign. A compute node
// that lands on the CPU is a silent fallback that eats the GPU's speed-up.
// Telling the two apart is the point of this file.
//
// The rule, when the graph ORT ran is known (SavedGraph below): a CPU node is
// shape computation when nothing it reads derives from a graph input's data
// (only from Shape/Size, initializers and constants, transitively:
// onnx/graph_derivation.h), whatever its element type, and its outputs are
// small (kMaxShapeElements each). vit's attention scale, Cast -> Sqrt -> Div
// of a Shape's element in float, is shape computation; a float node reading
// activations is a compute fallback. Without the graph (ORT did not save it)
// the rule falls back to element types: Shape-like ops, or integer tensors
// of at most kMaxShapeElements elements.
//
// SummarizePlacement is a pure function of observations; SavedGraph and
// ProfilePlacement touch files and ORT. All are thread-safe.
#pragma once


#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "onnx/graph_derivation.h"
#include "ort/profile.h"
#include "ort/runtime.h"
#include "ort/session.h"
#include "status/expected.h"

namespace ortgpu::doctor {

struct ProviderShare {
  std::string provider;   // "CUDAExecutionProvider"
  int nodes = 0;          // distinct nodes
  int64_t kernel_us = 0;  // summed kernel time over all profiled runs
  double time_share = 0;  // kernel_us / total
};

enum class CpuNodeKind { kShapeComputation, kComputeFallback };

struct CpuNode {
  std::string node_name;
  std::string op_type;
  CpuNodeKind kind = CpuNodeKind::kComputeFallback;
  std::string types;   // "float[1,128,768] int64[1,128] -> float[...]"
  std::string reason;  // from ORT's log when it said why; else a general one
  // With the graph: what made it compute ("reads '/q/MatMul_output_0', from
  // the values of input 'x'") or shape computation ("computed from shapes
  // and constants only"); "" when judged by element types.
  std::string derivation;
  // Some tensor it reads or writes is float16 or bfloat16: a half-precision
  // node ORT could not run on the GPU (doctor/checks_precision.h).
  bool half_precision = false;
};

// Shape computation writes tensors of at most this many elements each:
// shape vectors have a handful, 1,024 leaves room for batched index math.
inline constexpr int64_t kMaxShapeElements = 1024;

struct PlacementSummary {
  int total_nodes = 0;
  std::vector<ProviderShare> providers;   // most nodes first
  int memcpy_nodes = 0;                    // MemcpyToHost / MemcpyFromHost
  std::vector<CpuNode> shape_nodes;        // benign
  std::vector<CpuNode> compute_fallbacks;  // a real problem when the target is a GPU
  // How CPU nodes were told apart: true by derivation over the graph ORT
  // ran; false by element types alone, `graph_note` then says why.
  bool by_derivation = false;
  std::string graph_note;
};

// `target_provider` is the EP the session asked for; nodes on any other EP
// are classified. `ort_logs` supply ORT's reasons ("CUDA kernel not found in
// registries for Op type: X node name: Y"). `graph`: the derivation of the
// graph ORT ran (its nodes named as the profile names them); null judges by
// element types. A node the graph lacks is judged by element types too.
PlacementSummary SummarizePlacement(const std::vector<NodeEvent>& events, std::string_view target_provider,
                                    const std::vector<OrtLogRecord>& ort_logs = {},
                                    const onnx::GraphDerivation* graph = nullptr);

// The graph ORT optimised for one session (fusions, renames, Memcpy nodes:
// the nodes its profile names), saved while the session is created.
// Weights over 1 KiB go to a side file that is never read, so the graph
// file stays small for big models. Both files are removed on destruction,
// which must come after the session's last ProfilePlacement.
class SavedGraph {
 public:
  // The files get unique names in `dir`.
  explicit SavedGraph(const std::string& dir);
  ~SavedGraph();
  SavedGraph(const SavedGraph&) = delete;
  SavedGraph& operator=(const SavedGraph&) = delete;

  // Makes a session created with `options` save its optimised graph here.
  void Request(SessionOptions& options) const;
  const std::string& path() const { return path_; }
  // Where ORT writes the weights (beside the graph; only when it has some over 1 KiB).
  std::string weights_path() const;

 private:
  std::string path_;
  std::string weights_name_;
};

// Runs `session` once with ORT's run-level profiling (Session::RunProfiled,
// the profile written under `profile_dir` and deleted after reading) and
// summarises where each node ran against the session's own provider.
// `ort_logs` are ORT's records from the session's creation, for reasons.
// `graph`: the derivation of the session's optimised graph; when null and
// the session saved one (SessionOptions::optimized_model_path, as
// SavedGraph asks), it is read from there. When neither, element types
// decide (summary.graph_note says why).
Expected<PlacementSummary> ProfilePlacement(const Session& session, const std::vector<Tensor>& inputs,
                                            const std::string& profile_dir,
                                            const std::vector<OrtLogRecord>& ort_logs = {},
                                            const onnx::GraphDerivation* graph = nullptr);

// True when a node is shape computation: with `derivation` (the node's facts
// from the graph), when it reads no data and its outputs are small; without,
// when it is a Shape-like op or every tensor is a small integer one.
bool IsShapeComputation(const NodeEvent& e, const onnx::NodeDerivation* derivation = nullptr);

}  // namespace ortgpu::doctor
