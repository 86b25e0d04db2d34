// The KServe v2 gRPC messages (Triton's grpc_service.proto, package
// `inference`) turned into the server core's protocol-neutral types and
// back: ModelInferRequest -> InferRequest, InferResponse ->
// ModelInferResponse, and the core's JSON answers (model configuration,
// statistics) -> their proto messages.
//
// Pure functions with no shared state; safe to call from any thread.
//
// Decisions (tested in tests/serve/grpc/):
//   - An input's data comes from raw_input_contents (one entry per input, in
//     input order) or from its typed `contents`, never both in one request.
//     Raw bytes are taken out of the request message (moved, not copied) and
//     the tensor borrows them. BYTES raw contents are Triton's serialisation:
//     each element a 4-byte little-endian length and its bytes.
//   - Typed contents use the field Triton names for the datatype (fp32_contents
//     for FP32, int_contents for INT8/INT16/INT32, uint_contents for
//     UINT8/UINT16/UINT32, ...); FP16 and BF16 have none and must be raw.
//     Values out of the datatype's range are an error, not wrapped.
//   - Every output is returned in raw_output_contents, in output order, as
//     Triton's gRPC endpoint does.
//   - Parameters travel as the core's JSON text: bool_param -> true/false,
//     int64_param -> the integer, string_param -> a JSON string.
//   - An input or output whose parameters name a shared_memory_region (with
//     shared_memory_byte_size and optionally shared_memory_offset) lives in
//     that registered region: the input tensor borrows the mapped bytes; the
//     output is copied into the region and its raw_output_contents entry is
//     left empty (so the indices of the others stay aligned). The inputs in
//     regions have no raw_input_contents entry.
//   - `classification` on an output is kept in its parameters; the server
//     classifies the output (serve/classification.h), as on HTTP.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grpc_service.pb.h"
#include "serve/inference.h"
#include "serve/scheduler/model_stats.h"
#include "serve/shared_memory.h"
#include "status/expected.h"

namespace ortgpu::serve {

// Decodes `request`, moving its raw_input_contents into the returned
// tensors (the message is left without them). An input placed in a shared
// memory region is recorded in InferRequest::shared_memory_inputs with no
// data: PrepareExtensions (infer_extensions.h) reads it, as for HTTP.
// InvalidArgument naming the input and the problem for any inconsistency;
// Unimplemented for shared memory when `shm` is null.
Expected<InferRequest> DecodeGrpcInferRequest(inference::ModelInferRequest& request,
                                              const SharedMemoryRegistry* shm = nullptr);

// Fills `out` from `response`; outputs already written into a shared memory
// region (WriteSharedMemoryOutputs) carry their region's parameters and an
// empty raw entry. Internal when an output's datatype has no KServe name or
// its data does not match its shape.
Status EncodeGrpcInferResponse(const InferResponse& response, inference::ModelInferResponse& out);

// The statistics extension's answer (ModelStatistics), field for field what
// protocol::StatisticsToJson writes over HTTP.
void EncodeGrpcStatistics(const std::vector<StatsSnapshot>& versions, inference::ModelStatisticsResponse& out);

// One parameter as the core keeps it (JSON text) and as gRPC sends it.
std::string GrpcParameterToJsonText(const inference::InferParameter& p);
inference::InferParameter GrpcParameterFromJsonText(const std::string& json_text);

}  // namespace ortgpu::serve
