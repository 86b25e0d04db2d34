#include "gpu/elf_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "sys/environment.h"

namespace ortgpu::gpu {
namespace {

// ELF constants (from <elf.h>, restated so the layout is visible here).
constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kShtDynamic = 6;
constexpr uint32_t kShtDynsym = 11;
constexpr uint32_t kShtGnuVerdef = 0x6ffffffd;
constexpr uint32_t kShtGnuVerneed = 0x6ffffffe;
constexpr uint32_t kShtGnuVersym = 0x6fffffff;
constexpr uint64_t kDtNull = 0, kDtNeeded = 1, kDtSoname = 14, kDtRpath = 15, kDtRunpath = 29;
constexpr uint16_t kShnXindex = 0xffff;
constexpr uint16_t kVerFlgBase = 1;
constexpr size_t kEhdrSize = 64, kShdrSize = 64, kSymSize = 24, kDynSize = 16;
// A sane cap on version chains, so a loop in vd_next/vn_next cannot spin.
constexpr size_t kMaxVersionEntries = 1 << 16;

// Little-endian reads with bounds checks; `ok` turns false on overrun.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  bool InBounds(uint64_t off, uint64_t len) const {
    return off <= data_.size() && len <= data_.size() - off;
  }
  template <typename T>
  bool Read(uint64_t off, T* out) const {
    if (!InBounds(off, sizeof(T))) return false;
    std::memcpy(out, data_.data() + off, sizeof(T));  // host is little-endian (x86-64/aarch64)
    return true;
  }

 private:
  std::string_view data_;
};

struct RawSection {
  uint32_t name = 0, type = 0, link = 0, info = 0;
  uint64_t addr = 0, offset = 0, size = 0, entsize = 0;
};

}  // namespace

Expected<ElfReader> ElfReader::Open(const FileSystem& fs, const std::string& path) {
  auto header = fs.ReadRange(path, 0, kEhdrSize);
  if (!header.ok()) return header.status().WithContext("reading ELF file");
  auto size = fs.FileSize(path);
  if (!size.ok()) return size.status().WithContext("reading ELF file");
  ElfReader reader;
  reader.fs_ = &fs;
  reader.size_ = std::max<uint64_t>(*size, header->size());
  reader.origin_ = path;
  Status st = reader.ParseAll(*header);
  if (!st.ok()) return st;
  return reader;
}

Expected<ElfReader> ElfReader::Parse(std::string bytes, std::string origin) {
  ElfReader reader;
  reader.bytes_ = std::move(bytes);
  reader.size_ = reader.bytes_.size();
  reader.origin_ = std::move(origin);
  Status st = reader.ParseAll(std::string_view(reader.bytes_).substr(0, kEhdrSize));
  if (!st.ok()) return st;
  return reader;
}

const ElfSection* ElfReader::FindSection(std::string_view name) const {
  for (const auto& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Expected<std::string_view> ElfReader::SectionBytes(std::string_view name) const {
  const ElfSection* s = FindSection(name);
  if (s == nullptr) return NotFound(origin_ + " has no section " + std::string(name));
  if (s->type == kShtNobits) {
    return InvalidArgument(origin_ + ": section " + std::string(name) + " has no file bytes (NOBITS)");
  }
  return SectionData(static_cast<size_t>(s - sections_.data()));
}

Expected<std::string> ElfReader::ReadFileRange(uint64_t offset, uint64_t size) const {
  if (offset > size_) {
    return InvalidArgument(origin_ + ": cannot read at offset " + std::to_string(offset) +
                           ", past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  return Fetch(offset, std::min(size, size_ - offset));
}

Expected<std::string> ElfReader::Fetch(uint64_t offset, uint64_t size) const {
  if (fs_ == nullptr) return bytes_.substr(offset, size);  // bounds checked by the caller
  auto bytes = fs_->ReadRange(origin_, offset, size);
  if (!bytes.ok() && bytes.status().code() != Code::kInvalidArgument) {
    return bytes.status().WithContext("reading ELF file");
  }
  if (!bytes.ok() || bytes->size() < size) {
    return InvalidArgument(origin_ + ": the file ends before byte " + std::to_string(offset + size) +
                           " although it was " + std::to_string(size_) +
                           " bytes when opened; it is truncated or was replaced while being read "
                           "(reinstall the package that ships it)");
  }
  return bytes;
}

Expected<std::string_view> ElfReader::SectionData(size_t index) const {
  const ElfSection& s = sections_[index];
  if (s.type == kShtNobits) return std::string_view();  // no file bytes (and unchecked bounds)
  if (fs_ == nullptr) return std::string_view(bytes_).substr(s.offset, s.size);
  std::lock_guard<std::mutex> lock(cache_->mu);
  auto it = cache_->bytes.find(index);
  if (it == cache_->bytes.end()) {
    auto bytes = Fetch(s.offset, s.size);
    if (!bytes.ok()) return bytes.status();
    it = cache_->bytes.emplace(index, std::move(bytes).value()).first;
  }
  return std::string_view(it->second);
}

Status ElfReader::ParseAll(std::string_view header) {
  const auto bad = [this](const std::string& why) {
    return InvalidArgument(origin_ + " is not a readable ELF64 shared library: " + why +
                           "; the file may be truncated, corrupt, or not a Linux library "
                           "(reinstall the package that ships it)");
  };
  if (header.size() < kEhdrSize) return bad("file is shorter than an ELF header");
  if (std::memcmp(header.data(), "\x7f" "ELF", 4) != 0) return bad("no ELF magic");
  if (header[4] != 2) return bad("not 64-bit (EI_CLASS != ELFCLASS64)");
  if (header[5] != 1) return bad("not little-endian (EI_DATA != ELFDATA2LSB)");
  Cursor c(header);
  c.Read(18, &machine_);
  ORTGPU_RETURN_IF_ERROR(ParseSections(header));
  ORTGPU_RETURN_IF_ERROR(ParseDynamic());
  return ParseSymbols();
}

Status ElfReader::ParseSections(std::string_view header) {
  const auto bad = [this](const std::string& why) {
    return InvalidArgument(origin_ + ": corrupt ELF section table: " + why +
                           "; the file is probably truncated or damaged (reinstall it)");
  };
  const auto in_file = [this](uint64_t off, uint64_t len) { return off <= size_ && len <= size_ - off; };
  Cursor h(header);
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum16 = 0, shstrndx16 = 0;
  h.Read(40, &shoff);
  h.Read(58, &shentsize);
  h.Read(60, &shnum16);
  h.Read(62, &shstrndx16);
  if (shoff == 0) return Status::Ok();  // no section headers: nothing more to read
  if (shentsize < kShdrSize) return bad("section header size " + std::to_string(shentsize));

  const auto read_raw = [](std::string_view entry, RawSection* r) {
    Cursor c(entry);
    return c.Read(0, &r->name) && c.Read(4, &r->type) && c.Read(16, &r->addr) && c.Read(24, &r->offset) &&
           c.Read(32, &r->size) && c.Read(40, &r->link) && c.Read(44, &r->info) && c.Read(56, &r->entsize);
  };
  if (!in_file(shoff, shentsize)) return bad("section headers lie past the end of the file");
  RawSection first;
  {
    ORTGPU_ASSIGN_OR_RETURN(const std::string entry, Fetch(shoff, kShdrSize));
    read_raw(entry, &first);
  }
  const uint64_t shnum = shnum16 == 0 ? first.size : shnum16;
  const uint64_t shstrndx = shstrndx16 == kShnXindex ? first.link : shstrndx16;
  if (shnum > size_ / kShdrSize) return bad("section count " + std::to_string(shnum));
  // shnum * shentsize cannot overflow: shnum <= size_ / 64 and shentsize < 2^16.
  if (!in_file(shoff, shnum * shentsize)) {
    return bad("section header " + std::to_string((size_ - shoff) / shentsize) + " is past the end");
  }
  ORTGPU_ASSIGN_OR_RETURN(const std::string table, Fetch(shoff, shnum * shentsize));
  std::vector<RawSection> raw(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    read_raw(std::string_view(table).substr(i * shentsize, kShdrSize), &raw[i]);
    if (raw[i].type != kShtNobits && !in_file(raw[i].offset, raw[i].size)) {
      return bad("section " + std::to_string(i) + " extends past the end of the file");
    }
  }
  if (shstrndx >= shnum) return bad("section name table index out of range");
  sections_.reserve(shnum);
  for (const auto& r : raw) {
    ElfSection s;
    s.type = r.type;
    s.offset = r.offset;
    s.size = r.size;
    s.address = r.addr;
    s.link = r.link;
    s.info = r.info;
    sections_.push_back(std::move(s));
  }
  // The name table is read like any other section (NOBITS has no bytes: no names).
  std::string_view name_table;
  if (sections_[shstrndx].type != kShtNobits) {
    auto names = SectionData(shstrndx);
    if (!names.ok()) return names.status();
    name_table = *names;
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    const uint32_t name = raw[i].name;
    if (name < name_table.size()) {
      const auto end = name_table.find('\0', name);
      if (end == std::string_view::npos) return bad("unterminated section name");
      sections_[i].name = std::string(name_table.substr(name, end - name));
    }
  }
  return Status::Ok();
}

namespace {

// Reads a NUL-terminated string at `off` of a string table, or nullopt.
std::optional<std::string> TableString(std::string_view table, uint64_t off) {
  if (off >= table.size()) return std::nullopt;
  const auto end = table.find('\0', off);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(table.substr(off, end - off));
}

}  // namespace

Status ElfReader::ParseDynamic() {
  for (size_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].type != kShtDynamic) continue;
    const uint32_t link = sections_[i].link;
    if (link >= sections_.size() || sections_[link].type == kShtNobits) {
      return InvalidArgument(origin_ + ": .dynamic names a missing string table; the file is corrupt");
    }
    ORTGPU_ASSIGN_OR_RETURN(const std::string_view strings, SectionData(link));
    ORTGPU_ASSIGN_OR_RETURN(const std::string_view dynamic, SectionData(i));
    Cursor c(dynamic);
    for (uint64_t off = 0; off + kDynSize <= dynamic.size(); off += kDynSize) {
      uint64_t tag = 0, val = 0;
      if (!c.Read(off, &tag) || !c.Read(off + 8, &val)) break;
      if (tag == kDtNull) break;
      if (tag != kDtNeeded && tag != kDtSoname && tag != kDtRpath && tag != kDtRunpath) continue;
      auto s = TableString(strings, val);
      if (!s) return InvalidArgument(origin_ + ": a .dynamic entry points outside .dynstr; the file is corrupt");
      if (tag == kDtNeeded) needed_.push_back(*s);
      if (tag == kDtSoname) soname_ = *s;
      if (tag == kDtRpath) rpath_ = SplitPathList(*s);
      if (tag == kDtRunpath) runpath_ = SplitPathList(*s);
    }
    break;
  }
  return Status::Ok();
}

Status ElfReader::ParseSymbols() {
  const auto bad = [this](const std::string& why) {
    return InvalidArgument(origin_ + ": corrupt dynamic symbol data: " + why +
                           "; the file is probably truncated or damaged (reinstall it)");
  };
  // The bytes of a linked string table; nullopt when the link is bad.
  // Read errors (a file cut short since Open) end the parse with their Status.
  Status read_error;
  const auto strings_of = [&](uint32_t link) -> std::optional<std::string_view> {
    if (link >= sections_.size() || sections_[link].type == kShtNobits) return std::nullopt;
    auto data = SectionData(link);
    if (!data.ok()) {
      read_error = data.status();
      return std::nullopt;
    }
    return *data;
  };

  // Version index -> name (and, for needed versions, the providing file).
  // Offsets below are relative to the start of their section: a version
  // chain that leaves its section is corrupt.
  std::map<uint16_t, std::string> version_name;
  std::map<uint16_t, std::string> version_file;
  for (size_t i = 0; i < sections_.size(); ++i) {
    const ElfSection& s = sections_[i];
    if (s.type != kShtGnuVerdef && s.type != kShtGnuVerneed) continue;
    ORTGPU_ASSIGN_OR_RETURN(const std::string_view data, SectionData(i));
    const Cursor c(data);
    if (s.type == kShtGnuVerdef) {
      auto strings = strings_of(s.link);
      if (!read_error.ok()) return read_error;
      if (!strings) return bad(".gnu.version_d has no string table");
      uint64_t off = 0;
      for (uint32_t n = 0; n < s.info && n < kMaxVersionEntries; ++n) {
        uint16_t flags = 0, ndx = 0;
        uint32_t aux = 0, next = 0, name = 0;
        if (!c.Read(off + 2, &flags) || !c.Read(off + 4, &ndx) || !c.Read(off + 12, &aux) ||
            !c.Read(off + 16, &next) || !c.Read(off + aux, &name)) {
          return bad(".gnu.version_d entry past the end");
        }
        auto vname = TableString(*strings, name);
        if (!vname) return bad(".gnu.version_d name outside its string table");
        version_name[ndx & 0x7fff] = *vname;
        if ((flags & kVerFlgBase) == 0) version_definitions_.push_back(*vname);
        if (next == 0) break;
        off += next;
      }
    } else {
      auto strings = strings_of(s.link);
      if (!read_error.ok()) return read_error;
      if (!strings) return bad(".gnu.version_r has no string table");
      uint64_t off = 0;
      for (uint32_t n = 0; n < s.info && n < kMaxVersionEntries; ++n) {
        uint16_t cnt = 0;
        uint32_t file = 0, aux = 0, next = 0;
        if (!c.Read(off + 2, &cnt) || !c.Read(off + 4, &file) || !c.Read(off + 8, &aux) ||
            !c.Read(off + 12, &next)) {
          return bad(".gnu.version_r entry past the end");
        }
        auto fname = TableString(*strings, file);
        if (!fname) return bad(".gnu.version_r file name outside its string table");
        uint64_t aoff = off + aux;
        for (uint16_t k = 0; k < cnt; ++k) {
          uint16_t other = 0;
          uint32_t name = 0, anext = 0;
          if (!c.Read(aoff + 6, &other) || !c.Read(aoff + 8, &name) || !c.Read(aoff + 12, &anext)) {
            return bad(".gnu.version_r aux entry past the end");
          }
          auto vname = TableString(*strings, name);
          if (!vname) return bad(".gnu.version_r version name outside its string table");
          version_name[other & 0x7fff] = *vname;
          version_file[other & 0x7fff] = *fname;
          if (anext == 0) break;
          aoff += anext;
        }
        if (next == 0) break;
        off += next;
      }
    }
  }

  size_t versym_index = sections_.size();  // the last .gnu.version section, if any
  for (size_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].type == kShtGnuVersym) versym_index = i;
  }
  std::string_view versym;
  if (versym_index < sections_.size()) {
    ORTGPU_ASSIGN_OR_RETURN(versym, SectionData(versym_index));
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    const ElfSection& s = sections_[i];
    if (s.type != kShtDynsym) continue;
    auto strings = strings_of(s.link);
    if (!read_error.ok()) return read_error;
    if (!strings) return bad(".dynsym has no string table");
    ORTGPU_ASSIGN_OR_RETURN(const std::string_view symbols, SectionData(i));
    const Cursor c(symbols);
    const Cursor v(versym);
    const uint64_t count = symbols.size() / kSymSize;
    for (uint64_t k = 1; k < count; ++k) {  // entry 0 is the null symbol
      const uint64_t off = k * kSymSize;
      uint32_t name = 0;
      uint8_t info = 0;
      uint16_t shndx = 0;
      if (!c.Read(off, &name) || !c.Read(off + 4, &info) || !c.Read(off + 6, &shndx)) {
        return bad("symbol " + std::to_string(k) + " past the end");
      }
      const uint8_t bind = info >> 4, type = info & 0xf;
      if (bind == 0) continue;  // STB_LOCAL
      auto sname = TableString(*strings, name);
      if (!sname) return bad("symbol name outside .dynstr");
      ElfSymbol sym;
      sym.name = std::move(*sname);
      sym.is_function = type == 2 || type == 10;
      sym.weak = bind == 2;
      uint16_t ver = 1;
      v.Read(k * 2, &ver);  // stays 1 (global) when .gnu.version is absent or short
      const uint16_t index = ver & 0x7fff;
      if (index > 1) {
        auto it = version_name.find(index);
        if (it != version_name.end()) sym.version = it->second;
        auto f = version_file.find(index);
        if (f != version_file.end()) sym.version_library = f->second;
      }
      if (shndx == 0) {
        undefined_.push_back(std::move(sym));
      } else {
        sym.default_version = (ver & 0x8000) == 0;
        defined_.push_back(std::move(sym));
      }
    }
    break;
  }
  return Status::Ok();
}

}  // namespace ortgpu::gpu
