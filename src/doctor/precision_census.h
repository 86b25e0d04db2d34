// Precision census of an ONNX model for `ortgpu doctor --model` (issue 26):
// how many nodes compute in float16 (or bfloat16) and how many in float32,
// the float32 "islands" inside a float16 model, its Casts and the Cast pairs
// that cancel.
//
// A node computes in the type of its first floating output (a comparison
// or ArgMax, with no floating output, in that of its first floating input;
// Shape and Size in none: they read no values);
// types come from the model's value_info where declared and otherwise from
// precision/types.h's per-op table. Casts are counted apart, never as
// compute. With a graph derivation (onnx/graph_derivation.h), nodes that
// read no graph input's data (shape arithmetic: vit's sqrt(head_dim) in
// float) are counted apart too: they are not what tensor cores would run.
//
// An island is a connected group of float32 compute nodes (connected when
// one reads what another writes), in a model that also computes in float16
// or bfloat16: each costs a Cast at every border and runs without the fast
// tensor cores. Only the main graph is counted; a node with subgraphs (If,
// Loop, Scan) counts once, by its output type.
//
// CensusPrecision is a pure function over protobuf values; ReadPrecisionCensus
// reads through the FileSystem seam. Both thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "onnx/graph_derivation.h"
#include "precision/convert.h"
#include "status/expected.h"
#include "sys/file_system.h"

namespace onnx {
class ModelProto;
}

namespace ortgpu::doctor {

enum class ModelPrecision {
  kFloat32,  // float32 compute, no float16 or bfloat16 node
  kFloat16,  // float16 or bfloat16 compute, no float32 node
  kMixed,    // both: float32 islands in a float16 model
  kOther,    // neither (an integer or float64 model)
};
std::string_view ModelPrecisionName(ModelPrecision p);  // "fp32", "fp16", "mixed", "other"

struct PrecisionIsland {
  std::vector<std::string> nodes;  // names in graph order ("<op>#<index>" for unnamed nodes)
  std::map<std::string, int> ops;  // op type -> nodes of it
  int border_casts = 0;            // Casts that feed it or read from it
};

// Two Casts in a row whose round trip is lossless (fp16 -> fp32 -> fp16):
// the second restores exactly what the first read, so both cost a kernel and
// a copy for nothing.
struct CancellingCasts {
  std::string first;
  std::string second;
  std::string types;  // "float16 -> float32 -> float16"
};

struct PrecisionCensus {
  int nodes = 0;            // in the main graph
  int fp16_nodes = 0;       // float16 compute
  int bf16_nodes = 0;       // bfloat16 compute
  int fp32_nodes = 0;       // float32 compute
  int shape_nodes = 0;      // shape arithmetic (with a derivation only)
  int other_nodes = 0;      // integer, bool, float64 or unknown types
  int casts = 0;            // Cast and CastLike nodes
  std::vector<CancellingCasts> cancelling_casts;
  // Casts whose input already has the target type ("Cast_7 (float16 to float16)").
  std::vector<std::string> useless_casts;
  // Biggest first (most nodes; ties in graph order). Empty unless the model
  // computes in float16 or bfloat16 too.
  std::vector<PrecisionIsland> fp32_islands;
  precision::WeightCensus weights;
  ModelPrecision precision = ModelPrecision::kOther;
};

// `derivation`: the model's own graph derived (by node name), or null to
// count every node by its types.
PrecisionCensus CensusPrecision(const ::onnx::ModelProto& model, const onnx::GraphDerivation* derivation = nullptr);

// Reads the model file at `path` through `fs` (external data is never read)
// and takes its census, with its graph derived to tell shape arithmetic
// apart. Errors name the file: unreadable, over 2 GiB (more than protobuf
// parses), not a ModelProto.
Expected<PrecisionCensus> ReadPrecisionCensus(const FileSystem& fs, const std::string& path);

}  // namespace ortgpu::doctor
