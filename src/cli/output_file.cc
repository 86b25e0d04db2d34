// WriteOutputFile (commands.h): the files commands write beside stdout.
#include <fstream>
#include <string>

#include "cli/commands.h"

namespace ortgpu::cli {

Status WriteOutputFile(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return Unavailable(std::string("cannot write the ") + what + " to " + path + "; check the folder exists and is writable");
  return Status::Ok();
}

}  // namespace ortgpu::cli
