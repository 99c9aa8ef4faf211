#include "backends/hip/hip_metadata.hpp"

#include "core/support/byte_io.hpp"

#include <charconv>
#include <cstring>
#include <elf.h>

namespace jitcache::hip {

std::string encode_lowered_names(const std::map<std::string, std::string>& names) {
  std::string out;
  for (const auto& [expression, symbol] : names) {
    detail::append_counted(out, expression);
    detail::append_counted(out, symbol);
  }
  return out;
}

Expected<std::map<std::string, std::string>> decode_lowered_names(std::string_view metadata) {
  std::map<std::string, std::string> names;
  while (!metadata.empty()) {
    auto expression = detail::take_counted(metadata);
    auto symbol = expression ? detail::take_counted(metadata) : std::nullopt;
    if (!symbol)
      return Error(ErrorCode::corrupt, "the stored lowered names are malformed");
    names.emplace(std::move(*expression), std::move(*symbol));
  }
  return names;
}

namespace {

constexpr std::string_view k_bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view k_target_prefix = "amdgcn-amd-amdhsa--";
// "amdhsa.target" as a MessagePack fixstr: 0xa0 | length, then the bytes.
constexpr std::string_view k_target_key = "\xad"
                                          "amdhsa.target";
constexpr std::uint32_t k_nt_amdgpu_metadata = 32; // NT_AMDGPU_METADATA (code object v3+)

Error corrupt(const std::string& why) {
  return Error(ErrorCode::corrupt, "not a usable AMDGPU code object: " + why);
}

// Reads a T at `offset` of `bytes`, or fails when it does not fit.
template <typename T> bool read_at(std::string_view bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

std::string_view slice(std::string_view bytes, std::uint64_t offset, std::uint64_t size) {
  if (offset > bytes.size() || bytes.size() - offset < size)
    return {};
  return bytes.substr(offset, size);
}

// The string value following the "amdhsa.target" key in a MessagePack map.
Expected<std::string> target_in_metadata(std::string_view msgpack) {
  const std::size_t at = msgpack.find(k_target_key);
  if (at == std::string_view::npos)
    return corrupt("its metadata note has no amdhsa.target");
  std::string_view rest = msgpack.substr(at + k_target_key.size());
  if (rest.empty())
    return corrupt("amdhsa.target has no value");
  const auto tag = static_cast<unsigned char>(rest[0]);
  std::uint64_t length = 0, header = 1;
  if ((tag & 0xe0) == 0xa0) {
    length = tag & 0x1f;
  } else if (tag == 0xd9 && rest.size() >= 2) {
    length = static_cast<unsigned char>(rest[1]);
    header = 2;
  } else if (tag == 0xda && rest.size() >= 3) {
    length = static_cast<unsigned char>(rest[1]) << 8 | static_cast<unsigned char>(rest[2]);
    header = 3;
  } else {
    return corrupt("amdhsa.target is not a string");
  }
  const std::string_view value = slice(rest, header, length);
  if (value.size() != length || value.substr(0, k_target_prefix.size()) != k_target_prefix)
    return corrupt("amdhsa.target is not an amdgcn-amd-amdhsa target");
  return std::string(value.substr(k_target_prefix.size()));
}

Expected<std::string> elf_target(std::string_view elf) {
  Elf64_Ehdr header;
  if (!read_at(elf, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return corrupt("no ELF header");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return corrupt("not a 64-bit little-endian ELF");
  if (header.e_machine != EM_AMDGPU)
    return corrupt("ELF machine " + std::to_string(header.e_machine) + ", not EM_AMDGPU (" +
                   std::to_string(EM_AMDGPU) + ")");
  if (header.e_phentsize != sizeof(Elf64_Phdr))
    return corrupt("unexpected program header size");
  for (std::uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (!read_at(elf, header.e_phoff + std::uint64_t{i} * sizeof segment, segment))
      return corrupt("program headers run past the end");
    if (segment.p_type != PT_NOTE)
      continue;
    const std::string_view notes = slice(elf, segment.p_offset, segment.p_filesz);
    std::uint64_t at = 0;
    Elf64_Nhdr note;
    while (read_at(notes, at, note)) {
      const std::uint64_t name_at = at + sizeof note;
      const std::uint64_t desc_at = name_at + ((note.n_namesz + 3ull) & ~3ull);
      at = desc_at + ((note.n_descsz + 3ull) & ~3ull);
      if (note.n_type == k_nt_amdgpu_metadata &&
          slice(notes, name_at, note.n_namesz) == std::string_view("AMDGPU\0", 7))
        return target_in_metadata(slice(notes, desc_at, note.n_descsz));
    }
  }
  return corrupt("no AMDGPU metadata note (code object v2 or older?)");
}

// The amdgcn-amd-amdhsa code object inside a clang offload bundle (what hipcc and some hipRTC
// versions produce): magic, u64 count, then per entry u64 offset, u64 size, u64 id length, id.
Expected<std::string_view> unbundle(std::string_view bundle) {
  std::uint64_t count = 0;
  if (!read_at(bundle, k_bundle_magic.size(), count))
    return corrupt("truncated offload bundle");
  std::uint64_t at = k_bundle_magic.size() + sizeof count;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t offset = 0, size = 0, id_length = 0;
    if (!read_at(bundle, at, offset) || !read_at(bundle, at + 8, size) ||
        !read_at(bundle, at + 16, id_length))
      return corrupt("truncated offload bundle entry");
    const std::string_view id = slice(bundle, at + 24, id_length);
    if (id.size() != id_length)
      return corrupt("truncated offload bundle id");
    at += 24 + id_length;
    if (id.find("amdgcn-amd-amdhsa") != std::string_view::npos) {
      const std::string_view elf = slice(bundle, offset, size);
      if (elf.size() != size || size == 0)
        return corrupt("offload bundle entry " + std::string(id) + " runs past the end");
      return elf;
    }
  }
  return corrupt("offload bundle holds no amdgcn-amd-amdhsa code object");
}

} // namespace

Expected<std::string> code_object_target(std::string_view bytes) {
  if (bytes.substr(0, k_bundle_magic.size()) == k_bundle_magic) {
    auto elf = unbundle(bytes);
    if (!elf)
      return elf.error();
    return elf_target(*elf);
  }
  return elf_target(bytes);
}

Expected<void> check_code_object(std::string_view bytes, std::string_view target) {
  auto found = code_object_target(bytes);
  if (!found)
    return found.error();
  if (*found != target)
    return corrupt("built for " + *found + ", not " + std::string(target));
  return {};
}

} // namespace jitcache::hip
