// Float16 conversion of an ONNX model (`ortgpu convert --to fp16`, and bench
// and serve in-process): float32 initializers, Constant values, value types
// and Cast targets become float16, under the rules users rely on from
// onnxconverter-common's convert_float_to_float16 and ORT's transformers
// float16.py (docs/PRECISION.md):
//
//  - the model's float32 inputs and outputs keep their type (a Cast at the
//    boundary) unless keep_io_types is off;
//  - values outside float16's range are clipped to it, not made infinite;
//  - ops without float16 kernels (the op block list) and named nodes (the
//    node block list) stay float32, with a Cast on each side; inputs that
//    must stay float32 whatever the node (Resize's scales, the statistics of
//    LayerNormalization) stay float32;
//  - a weight used by float16 and float32 nodes alike is kept in float32 and
//    given a float16 copy, so no node gets a weight of the wrong type (torch's
//    `model.half()` export of BERT fails to load on exactly that:
//    "LayerNormalization bound to float and float16");
//  - nodes with subgraphs (If, Loop, Scan) stay float32 with their subgraphs;
//  - no Cast is left whose input already has the target type, and no
//    fp16 -> fp32 -> fp16 Cast pair;
//  - a model already in float16 is recognised and left as it is.
//
// Element types of intermediate values come from the model's value_info
// where it has them, else from a type table per op (types.h). Pure functions
// over protobuf values; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "status/expected.h"

namespace onnx {
class ModelProto;
}

namespace ortgpu::precision {

// Ops kept in float32 by default: ORT's DEFAULT_OP_BLOCK_LIST (no float16
// kernel, or float16 changes what they compute: TopK, Range, CumSum, Min,
// Max, NonMaxSuppression, RoiAlign, Resize, Upsample, the ai.onnx.ml
// operators) plus random generators and quantization ops, whose float16
// forms depend on the opset.
const std::vector<std::string>& DefaultOpBlockList();

struct ConvertOptions {
  // Float32 graph inputs and outputs stay float32 (Casts at the boundary).
  bool keep_io_types = true;
  // Op types kept in float32.
  std::vector<std::string> op_block_list = DefaultOpBlockList();
  // Node names kept in float32, with the reason reported for each (the
  // placement pass and the mixed search fill this; users pass names).
  std::map<std::string, std::string> node_block_list;
  // Clipping of converted values: |x| below min_positive (and not 0) becomes
  // min_positive, above max_finite becomes max_finite (keeping the sign).
  // Defaults are ORT's: float16's smallest subnormal and its largest value.
  float min_positive = 5.96e-08f;
  float max_finite = 65504.0f;
};

struct KeptNode {
  std::string name;
  std::string op_type;
  std::string reason;  // "op Resize is in the op block list", ...
};

struct ConversionReport {
  // The model was float16 already and is returned unchanged; `message` says so.
  bool already_fp16 = false;
  std::string message;
  int nodes_total = 0;
  // Nodes computing in float16 now (their names, in graph order).
  std::vector<std::string> converted;
  // Nodes on float32 values left in float32, and why.
  std::vector<KeptNode> kept_fp32;
  int initializers_converted = 0;
  int initializers_duplicated = 0;  // kept in fp32 with an fp16 copy
  int constants_converted = 0;      // Constant and ConstantOfShape values
  int64_t values_clipped = 0;
  int casts_added = 0;              // at the boundary and around fp32 nodes
  int casts_retargeted = 0;         // the model's own Cast(to=float) now to float16
  int casts_removed = 0;            // useless or cancelling Casts dropped
  int nodes_named = 0;              // unnamed nodes given a name (needed to report them)
};

// Converts `model` in place. Errors: a model whose graph cannot be walked
// (a node reading a value nothing defines) says which.
// REQUIRES: external data already read in (precision/model_file.h).
Expected<ConversionReport> ConvertToFloat16(::onnx::ModelProto& model, const ConvertOptions& options);

// Gives every unnamed node of the main graph a name ("<op>_<index>"), so
// reports and block lists can name it; returns how many it named. The
// conversion does this itself; callers that list nodes before converting
// (placement, the mixed search) do it first so the names agree.
int NameUnnamedNodes(::onnx::ModelProto& model);

// The number of float32 and float16 weight elements (initializers and
// Constant values) of `model`; a model with more float16 than float32 is
// taken as already converted.
struct WeightCensus {
  int64_t fp32_elements = 0;
  int64_t fp16_elements = 0;
};
WeightCensus CountWeights(const ::onnx::ModelProto& model);
// The message saying `model` is float16 already (more float16 weights than
// float32 ones, or float16 weights and no float32 input), or "" when it is not.
std::string AlreadyFloat16(const ::onnx::ModelProto& model);

}  // namespace ortgpu::precision
