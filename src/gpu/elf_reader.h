// ElfReader: what the dynamic linker sees in an ELF64 little-endian shared
// library (x86-64 and aarch64 Linux): its SONAME, NEEDED list, RPATH/RUNPATH,
// section headers, and dynamic symbols with their GNU symbol versions.
//
// doctor uses it to read the CUDA EP's needs (which libraries, which versioned
// symbols) and what a candidate libcudart/libcublas copy provides, without
// loading either into the process.
//
// The file is read whole through FileSystem (the ORT 1.29 CUDA EP is 230 MB)
// and kept in memory; SectionBytes() returns views into that buffer. Every
// offset, size and index in the file is bounds-checked: a bad or truncated
// file gives an InvalidArgument Status naming the file and the problem, never
// a crash. Not copyable-cheap (owns the bytes), movable. Immutable after
// Parse(), so const methods may be called from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {

struct ElfSection {
  std::string name;      // ".dynsym", ".nv_fatbin", ...
  uint32_t type = 0;     // SHT_* (3 = STRTAB, 11 = DYNSYM, 8 = NOBITS ...)
  uint64_t offset = 0;   // file offset of the bytes
  uint64_t size = 0;     // size in bytes (no file bytes when type == SHT_NOBITS)
  uint64_t address = 0;  // virtual address when loaded
};

// A dynamic symbol and its GNU version.
struct ElfSymbol {
  std::string name;
  // Defined symbol: the version node it is defined in ("GLIBCXX_3.4",
  // "libcudart.so.13"); undefined symbol: the version it requires. Empty when
  // the symbol is unversioned (local/global base version).
  std::string version;
  // Undefined symbols only: the library .gnu.version_r names as the provider
  // of `version` ("libcudart.so.13"); empty when unversioned.
  std::string version_library;
  // Defined symbols only: false for a hidden (non-default, "sym@VER") version.
  bool default_version = true;
  bool is_function = false;  // STT_FUNC / STT_GNU_IFUNC
  bool weak = false;         // STB_WEAK
};

class ElfReader {
 public:
  // Reads `path` whole through `fs` and parses it.
  // Errors: NotFound/Unavailable from the file system; InvalidArgument when
  // the file is not an ELF64 little-endian object or is corrupt/truncated.
  [[nodiscard]] static Expected<ElfReader> Open(const FileSystem& fs, const std::string& path);
  // Parses bytes already in memory; `origin` names them in error messages.
  [[nodiscard]] static Expected<ElfReader> Parse(std::string bytes, std::string origin);

  ElfReader(ElfReader&&) = default;
  ElfReader& operator=(ElfReader&&) = default;

  const std::string& origin() const { return origin_; }
  uint16_t machine() const { return machine_; }  // e_machine: 62 = x86-64, 183 = aarch64
  const std::string& soname() const { return soname_; }  // empty when the file has none
  const std::vector<std::string>& needed() const { return needed_; }  // DT_NEEDED, in order
  const std::vector<std::string>& rpath() const { return rpath_; }      // DT_RPATH split on ':'
  const std::vector<std::string>& runpath() const { return runpath_; }  // DT_RUNPATH split on ':'
  const std::vector<ElfSection>& sections() const { return sections_; }
  const std::vector<ElfSymbol>& defined_symbols() const { return defined_; }
  const std::vector<ElfSymbol>& undefined_symbols() const { return undefined_; }
  // Version nodes this library defines (.gnu.version_d), base node excluded.
  const std::vector<std::string>& version_definitions() const { return version_definitions_; }

  // The section called `name`, or nullptr.
  const ElfSection* FindSection(std::string_view name) const;
  // The file bytes of section `name`. NotFound when absent; InvalidArgument
  // for a NOBITS section. The view lives as long as this reader.
  [[nodiscard]] Expected<std::string_view> SectionBytes(std::string_view name) const;

 private:
  ElfReader() = default;
  Status ParseAll();
  Status ParseSections();
  Status ParseDynamic();
  Status ParseSymbols();

  std::string bytes_;
  std::string origin_;
  uint16_t machine_ = 0;
  std::string soname_;
  std::vector<std::string> needed_;
  std::vector<std::string> rpath_;
  std::vector<std::string> runpath_;
  std::vector<ElfSection> sections_;
  std::vector<ElfSymbol> defined_;
  std::vector<ElfSymbol> undefined_;
  std::vector<std::string> version_definitions_;
};

}  // namespace ortgpu::gpu
