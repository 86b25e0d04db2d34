// Files a config.pbtxt names (default_model_filename, a warm-up
// input_data_file) must lie inside the folder they belong to: a config must
// not make the server open files elsewhere ("../../etc/shadow") and then
// reveal their sizes in errors or the repository index.
//
// Pure apart from reading the file system through the seam; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu::serve {

// JoinPath(folder, relative) when `relative` is a relative path without a
// ".." component and, with links resolved, still lies under `folder`;
// otherwise InvalidArgument naming `field` and `relative` (and no server
// path). A file that does not exist yet passes the link check (the loader
// then reports it missing).
Expected<std::string> ResolveInside(const std::string& folder, const std::string& relative, std::string_view field,
                                    const FileSystem& fs = RealFileSystem());

}  // namespace ortgpu::serve
