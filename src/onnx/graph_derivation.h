// Graph derivation: where what each node of an ONNX graph reads comes from.
//
// A value derives from a graph input's *data* when a chain of nodes carries
// that input's values to it. Shape and Size read only their input's shape, so
// their outputs (and whatever is computed from them, initializers and Constant
// nodes alone) derive only from shapes and constants: the shape arithmetic
// ORT keeps on the CPU on purpose, whatever its element type (vit's
// sqrt(head_dim) is a float computed from a Shape). doctor/placement.h judges
// CPU-placed nodes by this.
//
// The same walk marks the graph outputs computed after a selection op
// (NonMaxSuppression, TopK, NonZero): ops whose output count or order
// depends on the data, so two providers may list the same detections in
// another order or cut the list at another tie (ort/accuracy.h compares such
// outputs as sets of rows).
//
// Subgraphs (If, Loop, Scan) are walked too: a subgraph's own inputs count
// as data when its node reads data, names of the enclosing graph resolve to
// its values. Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::onnx {

struct NodeDerivation {
  std::string op_type;
  // True when some input the node reads derives from a graph input's data
  // (for Shape and Size, never: they read only shapes).
  bool reads_data = false;
  // When reads_data: the first such input ("/blocks/ln/Add_output_0") and
  // the graph input its values come from ("pixel_values").
  std::string data_input;
  std::string data_source;
};

struct GraphDerivation {
  // By node name, the nodes of subgraphs included. Nodes without a name are
  // left out (nothing could look them up).
  std::map<std::string, NodeDerivation> nodes;
  // Graph outputs computed after a selection op: output name -> that op,
  // "NonMaxSuppression '/roi_heads/nms'" (the nearest one upstream).
  std::map<std::string, std::string> selected_outputs;
};

// Derives a serialized ModelProto's main graph. InvalidArgument when the
// bytes are not a ModelProto. Initializers' external data is never read.
Expected<GraphDerivation> DeriveGraph(std::string_view model_bytes);
// Reads and derives a model file (NotFound when it cannot be read).
Expected<GraphDerivation> ReadGraphDerivation(const std::string& model_path);

// True for the ops whose output count or order depends on their input's
// values: NonMaxSuppression, TopK, NonZero.
bool IsSelectionOp(std::string_view op_type);

}  // namespace ortgpu::onnx
