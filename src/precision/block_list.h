// The op and node block lists as users write them: `ortgpu convert`'s
// --op-block-list and --node-block-list, and `ortgpu serve`'s config
// parameters precision_op_block_list and precision_node_block_list
// (docs/PRECISION.md, docs/SERVING.md "Precision"). One parser for both, so
// the two read the same words the same way. Pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ortgpu::precision {

// The op types kept in float32 (ConvertOptions::op_block_list) from `items`,
// each one or more comma-separated words (a flag given several times, or a
// config parameter's one string); surrounding spaces are dropped. "default"
// stands for DefaultOpBlockList(), "none" and empty words for nothing; any
// other word is an op type. Duplicates are dropped, the first kept. No items
// at all: nothing is blocked (callers that default to "default" say so).
std::vector<std::string> ParseOpBlockList(const std::vector<std::string>& items);

// The node names kept in float32 (ConvertOptions::node_block_list) from
// `items`, read as ParseOpBlockList reads them (without "default" and
// "none"), each with `reason` ("named in --node-block-list").
std::map<std::string, std::string> ParseNodeBlockList(const std::vector<std::string>& items,
                                                      const std::string& reason);

}  // namespace ortgpu::precision
