#include "serve/repository/contained_path.h"

#include <fmt/format.h>

namespace ortgpu::serve {

Expected<std::string> ResolveInside(const std::string& folder, const std::string& relative, std::string_view field,
                                    const FileSystem& fs) {
  auto refuse = [&](std::string_view why) -> Status {
    return InvalidArgument(fmt::format("config.pbtxt: {} '{}' {}; name a file inside the model's folder", field,
                                       relative, why));
  };
  if (relative.empty()) return refuse("is empty");
  if (relative.front() == '/') return refuse("is an absolute path");
  size_t start = 0;
  while (start <= relative.size()) {
    const size_t slash = std::min(relative.find('/', start), relative.size());
    if (relative.compare(start, slash - start, "..") == 0 && slash - start == 2) return refuse("leaves its folder");
    start = slash + 1;
  }
  const std::string path = JoinPath(folder, relative);
  if (fs.Exists(path)) {
    const std::string real_folder = fs.RealPath(folder);
    const std::string real_path = fs.RealPath(path);
    if (real_path.compare(0, real_folder.size() + 1, real_folder + "/") != 0) {
      return refuse("is a link that leads out of its folder");
    }
  }
  return path;
}

}  // namespace ortgpu::serve
