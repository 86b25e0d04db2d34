// ElfReader: what the dynamic linker sees in an ELF64 little-endian shared
// library (x86-64 and aarch64 Linux): its SONAME, NEEDED list, RPATH/RUNPATH,
// section headers, and dynamic symbols with their GNU symbol versions.
//
// doctor uses it to read the CUDA EP's needs (which libraries, which versioned
// symbols) and what a candidate libcudart/libcublas copy provides, without
// loading either into the process.
//
// Open() reads only what it parses, with FileSystem::ReadRange: the ELF
// header, the section header table, .shstrtab, and the dynamic-linking
// sections (.dynamic, .dynsym, .gnu.version*, and their string tables), a
// few hundred KB even for the 540 MB cuBLASLt. Other sections (.rodata,
// .nv_fatbin) are read on the first SectionBytes() call and kept. Parse()
// works on bytes already in memory and SectionBytes() views into them.
//
// Every offset, size and index in the file is bounds-checked against the
// file size: a bad or truncated file gives an InvalidArgument Status naming
// the file and the problem, never a crash. A reader from Open() keeps a
// pointer to its FileSystem. REQUIRES: that FileSystem outlives the reader.
// Not copyable, movable. The parsed data is immutable; SectionBytes() guards
// its cache with a mutex, so const methods may be called from several
// threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
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
  uint32_t link = 0;     // sh_link: for symbol/version/dynamic sections, their string table
  uint32_t info = 0;     // sh_info: for .gnu.version_d/_r, the entry count
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
  // Reads the headers and dynamic-linking sections of `path` through `fs`
  // (ranged reads, never the whole file) and parses them.
  // Errors: NotFound/Unavailable from the file system; InvalidArgument when
  // the file is not an ELF64 little-endian object or is corrupt/truncated.
  // REQUIRES: `fs` outlives the returned reader (SectionBytes reads from it).
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
  // for a NOBITS section, or (Open() readers) when the file now ends inside
  // the section; NotFound/Unavailable when the file can no longer be read.
  // An Open() reader reads the section on the first call (ranged) and keeps
  // it: ask for a 166 MB .nv_fatbin only when you need all of its bytes
  // (ParseFatbinOfLibrary in gpu/fatbin.h reads just its headers). The view
  // lives as long as this reader.
  [[nodiscard]] Expected<std::string_view> SectionBytes(std::string_view name) const;
  // Bytes [offset, offset + size) of the file, clipped at the size it had
  // when opened; not cached. For walking a large section piecewise (the
  // .nv_fatbin headers, see ParseFatbinOfLibrary). InvalidArgument when
  // `offset` is past that size or the file has since got shorter.
  [[nodiscard]] Expected<std::string> ReadFileRange(uint64_t offset, uint64_t size) const;

 private:
  // Sections read on demand by an Open() reader, by section index. std::map
  // nodes never move, so views into the strings stay valid.
  struct SectionCache {
    std::mutex mu;
    std::map<size_t, std::string> bytes;  // guarded by mu
  };

  ElfReader() = default;
  // `header`: the first min(64, file size) bytes of the file.
  Status ParseAll(std::string_view header);
  Status ParseSections(std::string_view header);
  Status ParseDynamic();
  Status ParseSymbols();
  // Bytes [offset, offset + size) of the file. REQUIRES: the range lies
  // inside size_ (checked by the caller); a file that got shorter is an error.
  Expected<std::string> Fetch(uint64_t offset, uint64_t size) const;
  // The bytes of section `index` (bounds checked by ParseSections); empty
  // for a NOBITS section. Open() readers read it once and cache it.
  Expected<std::string_view> SectionData(size_t index) const;

  std::string bytes_;                // Parse(): the whole file
  const FileSystem* fs_ = nullptr;   // Open(): where sections are read from
  uint64_t size_ = 0;                // the file size
  std::unique_ptr<SectionCache> cache_ = std::make_unique<SectionCache>();
  std::string origin_;               // Open(): the path; Parse(): the caller's name
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
