#include "precision/block_list.h"

#include <algorithm>
#include <string_view>

#include "precision/convert.h"

namespace ortgpu::precision {
namespace {

// The comma-separated words of `items`, without surrounding spaces; empty
// words dropped.
std::vector<std::string> Words(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::string_view rest = item;
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view word = rest.substr(0, comma);
      while (!word.empty() && (word.front() == ' ' || word.front() == '\t')) word.remove_prefix(1);
      while (!word.empty() && (word.back() == ' ' || word.back() == '\t')) word.remove_suffix(1);
      if (!word.empty()) out.emplace_back(word);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

void AddOnce(std::vector<std::string>& list, const std::string& op) {
  if (std::find(list.begin(), list.end(), op) == list.end()) list.push_back(op);
}

}  // namespace

std::vector<std::string> ParseOpBlockList(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& word : Words(items)) {
    if (word == "default") {
      for (const std::string& op : DefaultOpBlockList()) AddOnce(out, op);
    } else if (word != "none") {
      AddOnce(out, word);
    }
  }
  return out;
}

std::map<std::string, std::string> ParseNodeBlockList(const std::vector<std::string>& items,
                                                      const std::string& reason) {
  std::map<std::string, std::string> out;
  for (const std::string& name : Words(items)) out.emplace(name, reason);
  return out;
}

}  // namespace ortgpu::precision
