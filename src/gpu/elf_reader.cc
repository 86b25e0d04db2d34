#include "gpu/elf_reader.h"

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
  auto bytes = fs.ReadFile(path);
  if (!bytes.ok()) return bytes.status().WithContext("reading ELF file");
  return Parse(std::move(bytes).value(), path);
}

Expected<ElfReader> ElfReader::Parse(std::string bytes, std::string origin) {
  ElfReader reader;
  reader.bytes_ = std::move(bytes);
  reader.origin_ = std::move(origin);
  Status st = reader.ParseAll();
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
  // Bounds were checked in ParseSections().
  return std::string_view(bytes_).substr(s->offset, s->size);
}

Status ElfReader::ParseAll() {
  const auto bad = [this](const std::string& why) {
    return InvalidArgument(origin_ + " is not a readable ELF64 shared library: " + why +
                           "; the file may be truncated, corrupt, or not a Linux library "
                           "(reinstall the package that ships it)");
  };
  if (bytes_.size() < kEhdrSize) return bad("file is shorter than an ELF header");
  if (std::memcmp(bytes_.data(), "\x7f" "ELF", 4) != 0) return bad("no ELF magic");
  if (bytes_[4] != 2) return bad("not 64-bit (EI_CLASS != ELFCLASS64)");
  if (bytes_[5] != 1) return bad("not little-endian (EI_DATA != ELFDATA2LSB)");
  Cursor c(bytes_);
  c.Read(18, &machine_);
  ORTGPU_RETURN_IF_ERROR(ParseSections());
  ORTGPU_RETURN_IF_ERROR(ParseDynamic());
  return ParseSymbols();
}

Status ElfReader::ParseSections() {
  const auto bad = [this](const std::string& why) {
    return InvalidArgument(origin_ + ": corrupt ELF section table: " + why +
                           "; the file is probably truncated or damaged (reinstall it)");
  };
  Cursor c(bytes_);
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum16 = 0, shstrndx16 = 0;
  c.Read(40, &shoff);
  c.Read(58, &shentsize);
  c.Read(60, &shnum16);
  c.Read(62, &shstrndx16);
  if (shoff == 0) return Status::Ok();  // no section headers: nothing more to read
  if (shentsize < kShdrSize) return bad("section header size " + std::to_string(shentsize));

  const auto read_raw = [&](uint64_t index, RawSection* r) {
    const uint64_t base = shoff + index * shentsize;
    return c.InBounds(shoff, (index + 1) * shentsize) && c.Read(base + 0, &r->name) &&
           c.Read(base + 4, &r->type) && c.Read(base + 16, &r->addr) &&
           c.Read(base + 24, &r->offset) && c.Read(base + 32, &r->size) &&
           c.Read(base + 40, &r->link) && c.Read(base + 44, &r->info) &&
           c.Read(base + 56, &r->entsize);
  };
  RawSection first;
  if (!read_raw(0, &first)) return bad("section headers lie past the end of the file");
  uint64_t shnum = shnum16 == 0 ? first.size : shnum16;
  uint64_t shstrndx = shstrndx16 == kShnXindex ? first.link : shstrndx16;
  if (shnum > bytes_.size() / kShdrSize) return bad("section count " + std::to_string(shnum));
  std::vector<RawSection> raw(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    if (!read_raw(i, &raw[i])) return bad("section header " + std::to_string(i) + " is past the end");
    if (raw[i].type != kShtNobits && !c.InBounds(raw[i].offset, raw[i].size)) {
      return bad("section " + std::to_string(i) + " extends past the end of the file");
    }
  }
  if (shstrndx >= shnum) return bad("section name table index out of range");
  const RawSection& names = raw[shstrndx];
  std::string_view name_table = std::string_view(bytes_).substr(names.offset, names.size);
  sections_.reserve(shnum);
  for (const auto& r : raw) {
    ElfSection s;
    if (r.name < name_table.size()) {
      const auto end = name_table.find('\0', r.name);
      if (end == std::string_view::npos) return bad("unterminated section name");
      s.name = std::string(name_table.substr(r.name, end - r.name));
    }
    s.type = r.type;
    s.offset = r.offset;
    s.size = r.size;
    s.address = r.addr;
    sections_.push_back(std::move(s));
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

// The section header fields ParseSections() dropped, re-read by index.
struct LinkInfo {
  uint32_t link = 0, info = 0;
};

LinkInfo ReadLinkInfo(std::string_view bytes, uint64_t index) {
  Cursor c(bytes);
  uint64_t shoff = 0;
  uint16_t shentsize = 0;
  c.Read(40, &shoff);
  c.Read(58, &shentsize);
  LinkInfo li;
  c.Read(shoff + index * shentsize + 40, &li.link);
  c.Read(shoff + index * shentsize + 44, &li.info);
  return li;
}

}  // namespace

Status ElfReader::ParseDynamic() {
  for (size_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].type != kShtDynamic) continue;
    const LinkInfo li = ReadLinkInfo(bytes_, i);
    if (li.link >= sections_.size() || sections_[li.link].type == kShtNobits) {
      return InvalidArgument(origin_ + ": .dynamic names a missing string table; the file is corrupt");
    }
    const ElfSection& strtab = sections_[li.link];
    const std::string_view strings = std::string_view(bytes_).substr(strtab.offset, strtab.size);
    Cursor c(bytes_);
    for (uint64_t off = sections_[i].offset; off + kDynSize <= sections_[i].offset + sections_[i].size;
         off += kDynSize) {
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
  Cursor c(bytes_);
  const std::string_view all(bytes_);
  const auto strings_of = [&](uint32_t link) -> std::optional<std::string_view> {
    if (link >= sections_.size() || sections_[link].type == kShtNobits) return std::nullopt;
    return all.substr(sections_[link].offset, sections_[link].size);
  };

  // Version index -> name (and, for needed versions, the providing file).
  std::map<uint16_t, std::string> version_name;
  std::map<uint16_t, std::string> version_file;
  for (size_t i = 0; i < sections_.size(); ++i) {
    const ElfSection& s = sections_[i];
    const LinkInfo li = ReadLinkInfo(bytes_, i);
    if (s.type == kShtGnuVerdef) {
      auto strings = strings_of(li.link);
      if (!strings) return bad(".gnu.version_d has no string table");
      uint64_t off = s.offset;
      for (uint32_t n = 0; n < li.info && n < kMaxVersionEntries; ++n) {
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
    } else if (s.type == kShtGnuVerneed) {
      auto strings = strings_of(li.link);
      if (!strings) return bad(".gnu.version_r has no string table");
      uint64_t off = s.offset;
      for (uint32_t n = 0; n < li.info && n < kMaxVersionEntries; ++n) {
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

  const ElfSection* versym = nullptr;
  for (const auto& s : sections_) {
    if (s.type == kShtGnuVersym) versym = &s;
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    const ElfSection& s = sections_[i];
    if (s.type != kShtDynsym) continue;
    auto strings = strings_of(ReadLinkInfo(bytes_, i).link);
    if (!strings) return bad(".dynsym has no string table");
    const uint64_t count = s.size / kSymSize;
    for (uint64_t k = 1; k < count; ++k) {  // entry 0 is the null symbol
      const uint64_t off = s.offset + k * kSymSize;
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
      if (versym != nullptr && k * 2 + 2 <= versym->size) c.Read(versym->offset + k * 2, &ver);
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
