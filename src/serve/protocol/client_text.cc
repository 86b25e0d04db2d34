#include "serve/protocol/client_text.h"

#include <algorithm>
#include <filesystem>

namespace ortgpu::serve::protocol {
namespace {

// Characters that end a path in running text.
bool EndsPath(char c) {
  return c == ' ' || c == '\'' || c == '"' || c == ')' || c == ',' || c == ';' || c == '\n' || c == '\t' ||
         c == ']' || c == '`';
}

// A '/' that starts an absolute path: at the start or after a separator.
bool StartsPath(std::string_view text, size_t i) {
  if (text[i] != '/') return false;
  if (i == 0) return true;
  const char before = text[i - 1];
  return before == ' ' || before == '\'' || before == '"' || before == '(' || before == '=' || before == '`' ||
         before == '[' || before == ':' || before == '\n' || before == '\t';
}

std::string Normalised(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.rfind("./", 0) == 0) root.erase(0, 2);
  return root;
}

}  // namespace

std::string ClientText(std::string_view text, const std::vector<std::string>& roots) {
  std::vector<std::string> sorted;
  for (const auto& r : roots) {
    if (!r.empty() && r != "/" && r != ".") sorted.push_back(Normalised(r));
  }
  // Longest first, so a root nested in another is matched as itself.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    bool replaced = false;
    for (const auto& root : sorted) {
      if (text.compare(i, root.size(), root) != 0) continue;
      const size_t end = i + root.size();
      const bool at_boundary = i == 0 || EndsPath(text[i - 1]) || StartsPath(text, i) || text[i - 1] == '(';
      if (!at_boundary) continue;
      if (end < text.size() && text[end] == '/') {
        i = end + 1;  // "ROOT/resnet/1" -> "resnet/1"
        replaced = true;
        break;
      }
      if (end == text.size() || EndsPath(text[end])) {
        out += "the model repository";
        i = end;
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    if (StartsPath(text, i) && text.compare(i, 4, "/v2/") != 0 && text.compare(i, 3, "/v2") != 0) {
      size_t end = i;
      while (end < text.size() && !EndsPath(text[end])) ++end;
      const std::string_view path = text.substr(i, end - i);
      const size_t last = path.find_last_of('/');
      // A file path: at least two components, and a file name with an extension or a path that
      // exists here. A request target the client sent ("/v1/models/x") is neither and is kept.
      const std::string_view name = path.substr(last + 1);
      std::error_code ec;
      const bool file_like = name.find('.') != std::string_view::npos ||
                             std::filesystem::exists(std::filesystem::path(std::string(path)), ec);
      if (std::count(path.begin(), path.end(), '/') >= 2 && !name.empty() && file_like) {
        out += path.substr(last + 1);
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace ortgpu::serve::protocol
